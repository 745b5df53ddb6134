// Package iggy (golden) is the generator's test package: the *_gen.go files
// here are generated from gen/testdata/schema, this file provides the
// hand-written names they refer to, and roundtrip_test.go exercises them.
package iggy

import (
	"errors"

	"github.com/kafka-iggy/kafka-iggy/codec/wire"
)

// ProtocolVersion is a packed protocol version.
type ProtocolVersion uint32

// Options is a minimal options block for the test package: raw bytes.
type Options []byte

// EncodedSize returns len(o).
func (o Options) EncodedSize() int { return len(o) }

// AppendTo appends o.
func (o Options) AppendTo(dst []byte) []byte { return append(dst, o...) }

// Validate refuses an odd-length block (a stand-in rule).
func (o Options) Validate() error {
	if len(o)%2 != 0 {
		return errors.New("odd options")
	}
	return nil
}

// ParseOptions copies the block after checking the stand-in rule.
func ParseOptions(b []byte) (Options, error) {
	if len(b)%2 != 0 {
		return nil, wire.ErrConstraint
	}
	return Options(b), nil
}
