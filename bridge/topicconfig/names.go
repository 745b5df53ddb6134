package topicconfig

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
)

// CheckReplicas checks one manual replica list against a one-broker
// cluster: non-empty, each broker registered (only self is) and listed once.
func CheckReplicas(replicas []int32, self int32) *Error {
	if len(replicas) == 0 {
		return &Error{Code: kerr.InvalidReplicaAssignment.Code, Msg: "The manual partition assignment includes an empty replica list."}
	}
	for i, r := range replicas {
		if r != self {
			return &Error{Code: kerr.InvalidReplicaAssignment.Code, Msg: fmt.Sprintf(
				"The manual partition assignment includes broker %d, but no such broker is registered.", r)}
		}
		if i > 0 {
			return &Error{Code: kerr.InvalidReplicaAssignment.Code, Msg: fmt.Sprintf(
				"The manual partition assignment includes the broker %d more than once.", r)}
		}
	}
	return nil
}

// NameProblem returns Kafka's message for a topic name it refuses, or
// "" for a valid name.
func NameProblem(name string) string {
	switch {
	case name == "":
		return "Topic name is illegal, it can't be empty"
	case name == "." || name == "..":
		return `Topic name cannot be "." or ".."`
	case len(name) > 249:
		return "Topic name is illegal, it can't be longer than 249 characters, topic name: " + name
	case !legalChars(name):
		return fmt.Sprintf("Topic name %q is illegal, it contains a character other than ASCII alphanumerics, '.', '_' and '-'", name)
	}
	return ""
}

func legalChars(name string) bool {
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
