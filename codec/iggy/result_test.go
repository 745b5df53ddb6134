package iggy

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/kafka-iggy/kafka-iggy/codec/wire"
)

func TestResultVectors(t *testing.T) {
	if got, want := AppendResultOK(nil), vec(t, "store_consumer_offset_reply_body"); !bytes.Equal(got, want) {
		t.Fatalf("AppendResultOK = %x, want %x", got, want)
	}
	if got, want := AppendResultError(nil, StatusStreamNameAlreadyExists), vec(t, "error_result_section_1012"); !bytes.Equal(got, want) {
		t.Fatalf("AppendResultError = %x, want %x", got, want)
	}
	_, err := ParseResult(vec(t, "error_result_section_1012"))
	var re *ResultError
	if !errors.As(err, &re) || re.Code != StatusStreamNameAlreadyExists || re.Index != 0 || !errors.Is(err, StatusStreamNameAlreadyExists) {
		t.Fatalf("ParseResult(error_result_section_1012) = %v", err)
	}
	body := vec(t, "create_stream_reply_body")
	payload, err := ParseResult(body)
	if err != nil || !bytes.Equal(payload, body[4:]) {
		t.Fatalf("ParseResult(create_stream_reply_body) = %x, %v", payload, err)
	}
	payload, err = ParseResult(vec(t, "store_consumer_offset_reply_body"))
	if err != nil || payload == nil || len(payload) != 0 {
		t.Fatalf("ParseResult(store_consumer_offset_reply_body) = %v, %v; want empty payload", payload, err)
	}
	// The error frame's body is the same section.
	frame := vec(t, "error_reply_frame_create_stream_exists")
	if !bytes.Equal(frame[HeaderSize:], vec(t, "error_result_section_1012")) {
		t.Fatal("error_reply_frame_create_stream_exists body is not error_result_section_1012")
	}
}

func TestParseResult(t *testing.T) {
	u32 := func(v ...uint32) []byte {
		var b []byte
		for _, x := range v {
			b = binary.LittleEndian.AppendUint32(b, x)
		}
		return b
	}
	tests := []struct {
		name        string
		body        []byte
		wantPayload []byte
		wantResult  *ResultError
		wantErr     error
	}{
		{name: "ok empty", body: u32(0), wantPayload: []byte{}},
		{name: "ok payload", body: u32(0, 7, 8), wantPayload: u32(7, 8)},
		{name: "rejection", body: u32(1, 0, 4042), wantResult: &ResultError{Code: 4042}},
		{name: "rejection ignores trailing", body: u32(1, 0, 57, 99), wantResult: &ResultError{Code: 57}},
		{name: "second entry rejects", body: u32(2, 0, 0, 1, 1012), wantResult: &ResultError{Code: 1012, Index: 1}},
		{name: "first nonzero wins", body: u32(2, 3, 20, 4, 1012), wantResult: &ResultError{Code: 20, Index: 3}},
		{name: "entries all zero", body: u32(1, 0, 0, 5), wantPayload: u32(5)},
		{name: "empty", body: nil, wantErr: wire.ErrShortBuffer},
		{name: "short count", body: []byte{0, 0, 0}, wantErr: wire.ErrShortBuffer},
		{name: "missing entry", body: u32(1), wantErr: wire.ErrShortBuffer},
		{name: "half entry", body: u32(1, 0), wantErr: wire.ErrShortBuffer},
		{name: "count beyond body", body: u32(3, 0, 5, 0, 5), wantErr: wire.ErrShortBuffer},
		{name: "max count", body: u32(0xFFFFFFFF, 0, 1), wantErr: wire.ErrShortBuffer},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			payload, err := ParseResult(tc.body)
			switch {
			case tc.wantErr != nil:
				wantDecodeErr(t, err, tc.wantErr)
			case tc.wantResult != nil:
				var re *ResultError
				if !errors.As(err, &re) || *re != *tc.wantResult || !errors.Is(err, tc.wantResult.Code) || re.Error() == "" {
					t.Fatalf("err %v, want %+v", err, *tc.wantResult)
				}
			default:
				if err != nil || !bytes.Equal(payload, tc.wantPayload) {
					t.Fatalf("ParseResult = %x, %v; want %x", payload, err, tc.wantPayload)
				}
			}
		})
	}
}
