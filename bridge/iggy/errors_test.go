package iggy

import (
	"fmt"
	"testing"

	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
)

// The error predicates follow the class: of schema/errors.yaml, through a
// result section or an eviction alike, and the stream and topic codes agree
// whether the target was named by id or by name.
func TestErrorClassesFromSchema(t *testing.T) {
	cases := []struct {
		st                             icodec.Status
		retriable, notFound, unauthzed bool
	}{
		{icodec.StatusTransientNotAccepted, true, false, false},
		{icodec.StatusStaleClient, true, false, false},
		{icodec.StatusUnauthenticated, true, false, false},
		{icodec.StatusUnauthorized, false, false, true},
		{icodec.StatusInvalidCredentials, false, false, true},
		{icodec.StatusResourceNotFound, false, true, false},
		{icodec.StatusStreamIDNotFound, false, true, false},
		{icodec.StatusStreamNameNotFound, false, true, false},
		{icodec.StatusTopicIDNotFound, false, true, false},
		{icodec.StatusTopicNameNotFound, false, true, false},
		{icodec.StatusPartitionNotFound, false, true, false},
		{icodec.StatusInvalidTopicName, false, false, false},
		{icodec.StatusIncompatibleProtocolVersion, false, false, false},
	}
	for _, c := range cases {
		for _, err := range []error{
			c.st,
			&Error{Op: "test", Sent: true, Err: &icodec.ResultError{Code: c.st}},
			fmt.Errorf("wrapped: %w", c.st),
		} {
			if got := Retriable(err); got != c.retriable {
				t.Errorf("Retriable(%v) = %v", err, got)
			}
			if got := IsNotFound(err); got != c.notFound {
				t.Errorf("IsNotFound(%v) = %v", err, got)
			}
			if got := IsUnauthorized(err); got != c.unauthzed {
				t.Errorf("IsUnauthorized(%v) = %v", err, got)
			}
		}
	}
	if !IsNotFound(ErrNotFound) || !Retriable(ErrTimeout) || Retriable(ErrClosed) {
		t.Error("client errors lost their meaning")
	}
}
