// Package instr parses the instruction-block protocol (SPEC.md "Instruction-block
// protocol"): an AI reply carries fenced blocks tagged `instr`, each holding one
// instruction `@<target>::<tool>[::<params>]`. The parser is a single pass over
// the lines of the reply (linear time, never panics); every edge case it decides
// is written down in docs/instructions.md and pinned by parse_test.go.
package instr
