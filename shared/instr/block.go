package instr

// Block is one instruction found in a reply.
type Block struct {
	Index  int            `json:"index"`  // 1-based position among the reply's accepted blocks
	Line   int            `json:"line"`   // 1-based line of the opening fence
	Target string         `json:"target"` // e.g. svc, system, browser.platform_a
	Tool   string         `json:"tool"`   // e.g. status, files/read
	Params map[string]any `json:"params"` // never nil
	Label  string         `json:"label"`  // "@target::tool", with " #n" when repeated in one reply
}

// Refused is something that looks like an instruction but is not executed:
// a superseded format. It is reported to the AI as a failed section so it
// learns the current format.
type Refused struct {
	Line    int    `json:"line"`
	Label   string `json:"label"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Dropped is an `instr` block SPEC.md rule 4 drops (empty, bad first line,
// cut off at the end of the reply). It is listed in structured results only.
type Dropped struct {
	Line   int    `json:"line"`
	Reason string `json:"reason"`
}

// Result is everything Parse found in one reply.
type Result struct {
	Blocks  []Block   `json:"blocks"`
	Refused []Refused `json:"refused"`
	Dropped []Dropped `json:"dropped"`
}

// Reasons a block is dropped.
const (
	DropEmpty        = "empty_block"
	DropBadHeader    = "first_line_not_an_instruction"
	DropUnterminated = "unterminated_fence"
)

// Codes of refused instructions.
const CodeSupersededFormat = "superseded_format"
