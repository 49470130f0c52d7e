package hostops

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// The exec hop's framing (hop_client.go, hop_server.go). Every frame is
//
//	kind (1 byte) | call id (4 bytes, big endian) | length (4 bytes, big endian) | payload
//
// Calls are multiplexed on the one connection by id. The payloads are the
// gRPC service's own protobuf messages (shared/proto), so the two paths
// carry the same fields:
//
//	hopExec    supervisor → worker  request id length (1 byte) | request id | pb.ExecRequest
//	hopCancel  supervisor → worker  empty: the caller went away, kill the command
//	hopStarted worker → supervisor  pb.ExecStarted: what to kill should the worker die
//	hopResult  worker → supervisor  pb.ExecResult: the call's end
//
// hopStarted frames go on the hop's notes (pluginkit.Hop), one frame per
// packet, unless the notes are full or missing; then on the stream.
const (
	hopExec    byte = 1
	hopCancel  byte = 2
	hopStarted byte = 3
	hopResult  byte = 4
)

// hopHeader is the fixed part of a frame.
const hopHeader = 9

// hopFrame is one decoded frame; payload aliases the reader's buffer until
// the next read.
type hopFrame struct {
	kind    byte
	id      uint32
	payload []byte
}

var errHopFrame = errors.New("hostops hop: malformed frame")

// appendHopFrame appends one frame to buf.
func appendHopFrame(buf []byte, kind byte, id uint32, payload []byte) []byte {
	buf = append(buf, kind)
	buf = binary.BigEndian.AppendUint32(buf, id)
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(payload)))
	return append(buf, payload...)
}

// readHopFrame reads one frame, refusing unknown kinds and payloads over max
// before reading them. scratch is reused for the payload when large enough.
func readHopFrame(r *bufio.Reader, max int, scratch []byte) (hopFrame, []byte, error) {
	var h [hopHeader]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return hopFrame{}, scratch, err
	}
	f := hopFrame{kind: h[0], id: binary.BigEndian.Uint32(h[1:5])}
	if f.kind < hopExec || f.kind > hopResult {
		return hopFrame{}, scratch, fmt.Errorf("%w: kind %d", errHopFrame, f.kind)
	}
	n := binary.BigEndian.Uint32(h[5:9])
	if uint64(n) > uint64(max) {
		return hopFrame{}, scratch, fmt.Errorf("%w: payload of %d bytes over the limit of %d", errHopFrame, n, max)
	}
	if cap(scratch) < int(n) {
		scratch = make([]byte, n)
	}
	f.payload = scratch[:n]
	if _, err := io.ReadFull(r, f.payload); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return hopFrame{}, scratch, err
	}
	return f, scratch, nil
}

// parseHopPacket is readHopFrame for one packet of the notes: exactly one
// whole frame.
func parseHopPacket(p []byte, max int) (hopFrame, error) {
	if len(p) < hopHeader {
		return hopFrame{}, fmt.Errorf("%w: packet of %d bytes", errHopFrame, len(p))
	}
	f := hopFrame{kind: p[0], id: binary.BigEndian.Uint32(p[1:5])}
	if f.kind < hopExec || f.kind > hopResult {
		return hopFrame{}, fmt.Errorf("%w: kind %d", errHopFrame, f.kind)
	}
	n := binary.BigEndian.Uint32(p[5:9])
	if uint64(n) > uint64(max) || uint64(n) != uint64(len(p)-hopHeader) {
		return hopFrame{}, fmt.Errorf("%w: packet of %d bytes says %d", errHopFrame, len(p), n)
	}
	f.payload = p[hopHeader:]
	return f, nil
}

// appendHopExecPayload is hopExec's payload: the request id, then the request.
func appendHopExecPayload(buf []byte, reqID string, req []byte) []byte {
	if len(reqID) > 255 {
		reqID = "" // not a valid id (reqid.Valid); the worker would drop it anyway
	}
	buf = append(buf, byte(len(reqID)))
	buf = append(buf, reqID...)
	return append(buf, req...)
}

// splitHopExecPayload undoes appendHopExecPayload.
func splitHopExecPayload(p []byte) (reqID string, req []byte, err error) {
	if len(p) < 1 || len(p) < 1+int(p[0]) {
		return "", nil, fmt.Errorf("%w: exec payload too short for its request id", errHopFrame)
	}
	n := int(p[0])
	return string(p[1 : 1+n]), p[1+n:], nil
}
