package iggy

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// vectorBodies maps each golden vector that is a message body (or a shared
// encoding) to the generated type that decodes it. Frame vectors map their
// body part (after the 256-byte header); frameKinds says which header.
var vectorBodies = map[string]func() Body{
	"identifier_numeric_1":                   func() Body { return &Identifier{} },
	"identifier_numeric_0":                   func() Body { return &Identifier{} },
	"identifier_string_orders":               func() Body { return &Identifier{} },
	"name_test":                              func() Body { return &CreateStreamRequest{} },
	"consumer_single_numeric_7":              func() Body { return &Consumer{} },
	"consumer_group_string_my_group":         func() Body { return &Consumer{} },
	"optional_partition_none":                func() Body { return &OptionalPartition{} },
	"optional_partition_some_2":              func() Body { return &OptionalPartition{} },
	"partitioning_balanced":                  func() Body { return &Partitioning{} },
	"partitioning_partition_id_1":            func() Body { return &Partitioning{} },
	"partitioning_messages_key_user42":       func() Body { return &Partitioning{} },
	"polling_offset_100":                     func() Body { return &PollingStrategy{} },
	"polling_timestamp":                      func() Body { return &PollingStrategy{} },
	"polling_first":                          func() Body { return &PollingStrategy{} },
	"polling_last":                           func() Body { return &PollingStrategy{} },
	"polling_next":                           func() Body { return &PollingStrategy{} },
	"client_version_info":                    func() Body { return &ClientVersionInfo{} },
	"login_register_body":                    func() Body { return &LoginRegisterRequest{} },
	"login_register_with_pat_body":           func() Body { return &LoginRegisterWithPATRequest{} },
	"legacy_login_user_body":                 func() Body { return &LoginUserRequest{} },
	"create_topic_payload_with_options":      func() Body { return &CreateTopicRequest{} },
	"get_topic_response_payload":             func() Body { return &GetTopicResponse{} },
	"send_messages_payload_golden":           func() Body { return &SendMessagesRequest{} },
	"send_messages_payload_with_tlv_headers": func() Body { return &SendMessagesRequest{} },
	"send_messages_confirmation_golden":      func() Body { return &SendMessagesResponse{} },
	"poll_messages_request_payload":          func() Body { return &PollMessagesRequest{} },
	"poll_messages_response_golden":          func() Body { return &PollMessagesResponse{} },
	"poll_messages_response_empty":           func() Body { return &PollMessagesResponse{} },
	"store_consumer_offset_payload":          func() Body { return &StoreConsumerOffsetRequest{} },
	"get_consumer_offset_response":           func() Body { return &GetConsumerOffsetResponse{} },
	"sync_consumer_group_response":           func() Body { return &SyncConsumerGroupResponse{} },
	"describe_options_response_one_entry":    func() Body { return &DescribeOptionsResponse{} },
	"describe_options_request_topic":         func() Body { return &DescribeOptionsRequest{} },
	"create_consumer_group_payload":          func() Body { return &CreateConsumerGroupRequest{} },
	"join_consumer_group_payload":            func() Body { return &JoinConsumerGroupRequest{} },
	"get_consumer_group_response":            func() Body { return &GetConsumerGroupResponse{} },
	"login_register_request_frame":           func() Body { return &LoginRegisterRequest{} },
	"legacy_login_user_request_frame":        func() Body { return &LoginUserRequest{} },
	"create_stream_request_frame":            func() Body { return &CreateStreamRequest{} },
	"create_topic_request_frame":             func() Body { return &CreateTopicRequest{} },
	"send_messages_request_frame":            func() Body { return &SendMessagesRequest{} },
	"poll_messages_request_frame":            func() Body { return &PollMessagesRequest{} },
	"store_consumer_offset_request_frame":    func() Body { return &StoreConsumerOffsetRequest{} },
	"ping_request_frame":                     nil,
	"ping_reply_frame":                       nil,
	"eviction_frame_malformed_login":         nil,
	"eviction_frame_invalid_credentials":     nil,
	"eviction_frame_incompatible_protocol":   nil,
	"error_reply_frame_status_1009":          nil,
	"error_reply_frame_unauthenticated":      nil,
	"error_reply_frame_create_stream_exists": nil,
	"login_register_reply_frame":             func() Body { return &LoginRegisterResponse{} },
	"create_stream_reply_body":               func() Body { return &CreateStreamResponse{} },
	"store_consumer_offset_reply_body":       nil,
	"error_result_section_1012":              nil,
	"user_headers_block":                     nil,
	"options_block_golden":                   nil,
	"xxh32_consumer_name_my_consumer":        nil,
}

// resultFramed vectors carry a result section before the typed payload.
var resultFramedVectors = map[string]bool{
	"create_stream_reply_body":   true,
	"login_register_reply_frame": true,
}

// TestEveryVectorRoundTrips decodes every golden vector with the matching
// type and re-encodes it byte for byte. Frame vectors also go through the
// header type of their command byte.
func TestEveryVectorRoundTrips(t *testing.T) {
	vs := vectors(t)
	if len(vs) != 58 {
		t.Fatalf("expected 58 vectors, found %d", len(vs))
	}
	for name := range vs {
		if _, ok := vectorBodies[name]; !ok {
			t.Errorf("vector %s has no decoder in vectorBodies", name)
		}
	}
	for name, newBody := range vectorBodies {
		raw, ok := vs[name]
		if !ok {
			t.Errorf("vectorBodies names %s, which is not a vector", name)
			continue
		}
		t.Run(name, func(t *testing.T) {
			payload := raw
			var rebuilt []byte
			if len(raw) >= HeaderSize && bytes.HasSuffix([]byte(name), []byte("_frame")) {
				payload, rebuilt = roundTripHeader(t, raw)
			}
			if resultFramedVectors[name] {
				p, err := ParseResult(payload)
				if err != nil {
					t.Fatalf("result section: %v", err)
				}
				rebuilt = append(rebuilt, payload[:len(payload)-len(p)]...)
				payload = p
			}
			switch name {
			case "store_consumer_offset_reply_body":
				if p, err := ParseResult(payload); err != nil || len(p) != 0 {
					t.Fatalf("ok result section: %v % x", err, p)
				}
				rebuilt = AppendResultOK(nil)
			case "error_result_section_1012":
				if _, err := ParseResult(payload); err != StatusStreamNameAlreadyExists && !isResult(err, StatusStreamNameAlreadyExists) {
					t.Fatalf("result error: %v", err)
				}
				rebuilt = AppendResultError(nil, StatusStreamNameAlreadyExists)
			case "user_headers_block":
				it := NewHeaderIter(payload)
				var out []byte
				for it.Next() {
					kk, k := it.Key()
					vk, v := it.Value()
					out = AppendTLVField(out, kk, k)
					out = AppendTLVField(out, vk, v)
				}
				if err := it.Err(); err != nil {
					t.Fatal(err)
				}
				rebuilt = out
			case "options_block_golden":
				o, err := ParseOptions(payload)
				if err != nil {
					t.Fatal(err)
				}
				rebuilt = o.AppendTo(nil)
			case "xxh32_consumer_name_my_consumer":
				if got := XXH32([]byte("my-consumer"), 0); got != binary.LittleEndian.Uint32(payload) {
					t.Fatalf("XXH32 = %08x, vector %08x", got, binary.LittleEndian.Uint32(payload))
				}
				rebuilt = payload
			}
			if newBody != nil {
				m := newBody()
				n, err := m.DecodeFrom(payload)
				if err != nil {
					t.Fatalf("decode: %v", err)
				}
				if n != len(payload) {
					t.Fatalf("consumed %d of %d bytes", n, len(payload))
				}
				if err := m.Validate(); err != nil {
					t.Fatalf("validate: %v", err)
				}
				if m.EncodedSize() != len(payload) {
					t.Fatalf("EncodedSize %d, want %d", m.EncodedSize(), len(payload))
				}
				rebuilt = m.AppendTo(rebuilt)
			} else if rebuilt == nil {
				rebuilt = raw
			}
			if !bytes.Equal(rebuilt, raw) {
				t.Fatalf("re-encoded bytes differ\n got % x\nwant % x", rebuilt, raw)
			}
		})
	}
}

func isResult(err error, code Status) bool {
	re, ok := err.(*ResultError)
	return ok && re.Code == code
}

// roundTripHeader decodes the 256-byte header with the type its command byte
// names, re-encodes it, and returns the body.
func roundTripHeader(t *testing.T, frame []byte) (body, rebuilt []byte) {
	t.Helper()
	bodyLen := len(frame) - HeaderSize
	if size := binary.LittleEndian.Uint32(frame[48:]); int(size) != len(frame) {
		t.Fatalf("size field %d, frame %d bytes", size, len(frame))
	}
	switch HeaderCommand(frame[60]) {
	case HeaderCommandRequest:
		var h RequestHeader
		if _, err := h.DecodeFrom(frame); err != nil {
			t.Fatal(err)
		}
		if h.Client.IsZero() || !h.Operation.Valid() {
			t.Fatalf("request header: %+v", h)
		}
		if h.Operation == OperationNonReplicated {
			if _, ok := LookupCommand(h.Code); !ok {
				t.Fatalf("code %d at 196 is not a command", h.Code)
			}
		}
		rebuilt = h.AppendTo(nil, bodyLen)
	case HeaderCommandReply:
		var h ReplyHeader
		if _, err := h.DecodeFrom(frame); err != nil {
			t.Fatal(err)
		}
		rebuilt = h.AppendTo(nil, bodyLen)
	case HeaderCommandEviction:
		var h EvictionHeader
		if _, err := h.DecodeFrom(frame); err != nil {
			t.Fatal(err)
		}
		if h.Client.IsZero() {
			t.Fatal("eviction without client")
		}
		rebuilt = h.AppendTo(nil, bodyLen)
	default:
		t.Fatalf("command byte %d", frame[60])
	}
	return frame[HeaderSize:], rebuilt
}
