package bridgeproto

import (
	"unicode/utf16"
	"unicode/utf8"
)

// A hand-written decoder for the two frames every relay is made of
// (api_response, stream_event; performance, issue 15 third pass). It takes
// the message as every sender writes it: an object of exactly-named known
// keys, each once, with plain values. Anything else (an unknown or
// differently cased key, a repeated key, a null, a number with a fraction or
// exponent, a syntax error, text after the object) makes it give up, and
// Parse decodes the general way, so refusals and their messages are
// unchanged. FuzzFastDecode holds it to json.Unmarshal's result.

// fastDecode decodes data as typ, or returns nil to send Parse the general
// way. validate still runs on what it returns.
func fastDecode(typ string, data []byte) validator {
	switch typ {
	case TypeAPIResponse:
		return fastAPIResponse(data)
	case TypeStreamEvent:
		return fastStreamEvent(data)
	}
	return nil
}

func fastAPIResponse(data []byte) validator {
	m := &APIResponse{}
	ok := fastObject(data, func(d *fastScan, key string) (bit uint8) {
		switch key {
		case "type":
			bit, m.Type = 1, d.str()
		case "requestId":
			bit, m.RequestID = 2, d.str()
		case "status":
			bit, m.Status = 4, int(d.integer())
		case "headers":
			bit, m.Headers = 8, d.strMap()
		case "body":
			bit, m.Body = 16, d.str()
		case "error":
			bit, m.Error = 32, d.str()
		}
		return bit
	})
	if !ok || m.Type != TypeAPIResponse {
		return nil
	}
	return m
}

func fastStreamEvent(data []byte) validator {
	m := &StreamEvent{}
	ok := fastObject(data, func(d *fastScan, key string) (bit uint8) {
		switch key {
		case "type":
			bit, m.Type = 1, d.str()
		case "requestId":
			bit, m.RequestID = 2, d.str()
		case "seq":
			bit, m.Seq = 4, d.integer()
		case "event":
			bit, m.Event = 8, d.str()
		case "data":
			bit, m.Data = 16, d.str()
		}
		return bit
	})
	if !ok || m.Type != TypeStreamEvent {
		return nil
	}
	return m
}

// fastScan walks one message. ok turns false at the first thing it does
// not take, and every later read then returns zero values.
type fastScan struct {
	data []byte
	s    string // data as one string: the decoded strings are slices of it (one copy per message)
	i    int
	ok   bool
}

// fastObject walks the top-level object of data, calling field with the
// scanner positioned at each value; field reads the value and answers the
// key's bit (0: not a key it takes). A key seen twice, or one not taken,
// gives up. True when the whole input was one such object.
func fastObject(data []byte, field func(d *fastScan, key string) uint8) bool {
	var seen uint8
	d := &fastScan{data: data, s: string(data), ok: true}
	if !d.expect('{') {
		return false
	}
	if d.peek() == '}' {
		d.i++
	} else {
		for {
			key := d.plainStr()
			if !d.ok || !d.expect(':') {
				return false
			}
			d.space()
			bit := field(d, key)
			if bit == 0 || seen&bit != 0 || !d.ok {
				return false
			}
			seen |= bit
			if d.peek() == ',' {
				d.i++
				continue
			}
			if !d.expect('}') {
				return false
			}
			break
		}
	}
	d.space()
	return d.i == len(data)
}

func (d *fastScan) space() { d.i = skipSpace(d.data, d.i) }

// peek is the next byte after whitespace, or 0 at the end.
func (d *fastScan) peek() byte {
	d.space()
	if d.i >= len(d.data) {
		return 0
	}
	return d.data[d.i]
}

// expect takes byte c after whitespace.
func (d *fastScan) expect(c byte) bool {
	if !d.ok || d.peek() != c {
		d.ok = false
		return false
	}
	d.i++
	return true
}

// stringEnd finds the closing quote of the string opening at d.i and
// whether it holds escapes.
func (d *fastScan) stringEnd() (end int, escaped bool) {
	if !d.ok || d.i >= len(d.data) || d.data[d.i] != '"' {
		d.ok = false
		return 0, false
	}
	for j := d.i + 1; j < len(d.data); j++ {
		switch c := d.data[j]; {
		case c == '"':
			return j, escaped
		case c == '\\':
			escaped = true
			j++ // the escaped byte is never the end; json.Unmarshal checks the rest
		case c < 0x20:
			d.ok = false
			return 0, false
		}
	}
	d.ok = false
	return 0, false
}

// plainStr reads a string without escapes (a key).
func (d *fastScan) plainStr() string {
	d.space()
	end, escaped := d.stringEnd()
	if !d.ok || escaped {
		d.ok = false
		return ""
	}
	v := d.s[d.i+1 : end]
	d.i = end + 1
	return v
}

// str reads a string value (unescape decodes one with escapes).
func (d *fastScan) str() string {
	end, escaped := d.stringEnd()
	if !d.ok {
		return ""
	}
	start := d.i
	d.i = end + 1
	if !escaped {
		return d.s[start+1 : end]
	}
	v, ok := unescape(d.data[start+1 : end])
	if !ok {
		d.ok = false
	}
	return v
}

// integer reads a plain JSON integer (no fraction or exponent) that fits
// in 18 digits; anything else is left to the general decoder.
func (d *fastScan) integer() int64 {
	if !d.ok {
		return 0
	}
	j, neg := d.i, false
	if j < len(d.data) && d.data[j] == '-' {
		neg = true
		j++
	}
	start := j
	var v int64
	for j < len(d.data) && d.data[j] >= '0' && d.data[j] <= '9' {
		v = v*10 + int64(d.data[j]-'0')
		j++
	}
	n := j - start
	if n == 0 || n > 18 || (n > 1 && d.data[start] == '0') {
		d.ok = false
		return 0
	}
	if j < len(d.data) && (d.data[j] == '.' || d.data[j] == 'e' || d.data[j] == 'E') {
		d.ok = false
		return 0
	}
	d.i = j
	if neg {
		return -v
	}
	return v
}

// strMap reads an object of string values. Like json.Unmarshal, a repeated
// name keeps its last value and {} is an empty, non-nil map.
func (d *fastScan) strMap() map[string]string {
	if !d.expect('{') {
		return nil
	}
	m := map[string]string{}
	if d.peek() == '}' {
		d.i++
		return m
	}
	for d.ok {
		d.space()
		k := d.str()
		if !d.expect(':') {
			return nil
		}
		d.space()
		m[k] = d.str()
		if d.peek() == ',' {
			d.i++
			continue
		}
		d.expect('}')
		break
	}
	return m
}

// unescape decodes the inside of a JSON string holding escapes the way
// encoding/json does: a \u escape of a lone or mismatched surrogate becomes
// U+FFFD, and an unknown escape is refused (the general decoder then gives
// the syntax error). The input is valid UTF-8 (Parse checked it) and holds
// no control characters (stringEnd checked them).
func unescape(in []byte) (string, bool) {
	out := make([]byte, 0, len(in))
	for i := 0; i < len(in); {
		c := in[i]
		if c != '\\' {
			out = append(out, c)
			i++
			continue
		}
		if i+1 >= len(in) {
			return "", false
		}
		switch in[i+1] {
		case '"', '\\', '/':
			out = append(out, in[i+1])
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := hex4(in, i+2)
			if !ok {
				return "", false
			}
			i += 6
			if utf16.IsSurrogate(r) {
				// A pair decodes to one rune; anything else is U+FFFD.
				dec := utf8.RuneError
				if i+1 < len(in) && in[i] == '\\' && in[i+1] == 'u' {
					if lo, ok := hex4(in, i+2); ok {
						if d := utf16.DecodeRune(r, lo); d != utf8.RuneError {
							dec = d
							i += 6
						}
					}
				}
				r = dec
			}
			out = utf8.AppendRune(out, r)
			continue
		default:
			return "", false
		}
		i += 2
	}
	return string(out), true
}

// hex4 reads the four hex digits of a \u escape at in[at:].
func hex4(in []byte, at int) (rune, bool) {
	if at+4 > len(in) {
		return 0, false
	}
	var r rune
	for _, c := range in[at : at+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}
