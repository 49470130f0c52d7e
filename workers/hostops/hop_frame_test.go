package hostops

import (
	"bufio"
	"bytes"
	"testing"

	"google.golang.org/protobuf/proto"

	pb "github.com/svcd/svcd/shared/proto"
)

// FuzzHopFrame: whatever bytes arrive on the hop, the frame reader returns
// frames within the limit or an error, never panics, and every frame it
// returns encodes back to exactly the bytes it consumed; exec payloads
// split and join back the same, and their messages decode or fail cleanly.
func FuzzHopFrame(f *testing.F) {
	req, _ := proto.Marshal(&pb.ExecRequest{Command: "true", Cwd: "/tmp", TimeoutMs: 1000})
	res, _ := proto.Marshal(&pb.ExecResult{Ok: true, Stdout: []byte("hi\n"), Pid: 42})
	st, _ := proto.Marshal(&pb.ExecStarted{Pid: 42, Pgid: 42, Cgroup: "/sys/fs/cgroup/x"})
	f.Add(appendHopFrame(nil, hopExec, 1, appendHopExecPayload(nil, "req-1", req)))
	f.Add(append(appendHopFrame(nil, hopStarted, 1, st), appendHopFrame(nil, hopResult, 1, res)...))
	f.Add(appendHopFrame(nil, hopCancel, 7, nil))
	f.Add([]byte{9, 0, 0, 0, 1, 0, 0, 0, 0})
	f.Add([]byte{1, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{1, 0, 0, 0, 1, 0, 0, 0, 3, 200, 'a'})
	const max = 1 << 16
	f.Fuzz(func(t *testing.T, data []byte) {
		// One packet of the notes: a whole frame or an error.
		if fr, err := parseHopPacket(data, max); err == nil {
			if !bytes.Equal(appendHopFrame(nil, fr.kind, fr.id, fr.payload), data) {
				t.Fatalf("packet does not encode back to its bytes")
			}
		}
		r := bufio.NewReader(bytes.NewReader(data))
		var scratch []byte
		consumed := 0
		for {
			var fr hopFrame
			var err error
			fr, scratch, err = readHopFrame(r, max, scratch)
			if err != nil {
				return
			}
			if fr.kind < hopExec || fr.kind > hopResult || len(fr.payload) > max {
				t.Fatalf("frame out of bounds: kind %d, %d bytes", fr.kind, len(fr.payload))
			}
			enc := appendHopFrame(nil, fr.kind, fr.id, fr.payload)
			if !bytes.Equal(enc, data[consumed:consumed+len(enc)]) {
				t.Fatalf("frame does not encode back to its bytes")
			}
			consumed += len(enc)
			switch fr.kind {
			case hopExec:
				id, body, err := splitHopExecPayload(fr.payload)
				if err != nil {
					continue
				}
				if !bytes.Equal(appendHopExecPayload(nil, id, body), fr.payload) {
					t.Fatalf("exec payload does not join back")
				}
				_ = proto.Unmarshal(body, &pb.ExecRequest{})
			case hopStarted:
				_ = proto.Unmarshal(fr.payload, &pb.ExecStarted{})
			case hopResult:
				var m pb.ExecResult
				if proto.Unmarshal(fr.payload, &m) == nil {
					_ = execResultFromPB(&m)
				}
			}
		}
	})
}
