package benchfig

import (
	"bytes"
	"fmt"
	"strconv"
)

// EventStamp reads the wall-clock stamp (Unix ns) the fake platform puts in
// an SSE data line as `t=<digits>` (its `stamp=1` streams). ok is false for
// a line that is not a stamped data line; err is set when the stamp is there
// but is not a number.
func EventStamp(line []byte) (stamp int64, ok bool, err error) {
	at := bytes.Index(line, []byte("t="))
	if !bytes.HasPrefix(line, []byte("data: ")) || at < 0 {
		return 0, false, nil
	}
	digits := line[at+2:]
	if end := bytes.IndexFunc(digits, func(c rune) bool { return c < '0' || c > '9' }); end >= 0 {
		digits = digits[:end]
	}
	stamp, err = strconv.ParseInt(string(digits), 10, 64)
	if err != nil {
		return 0, true, fmt.Errorf("event stamp in %q: %w", line, err)
	}
	return stamp, true, nil
}
