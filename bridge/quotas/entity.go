package quotas

import (
	"sort"
	"strings"
)

// Entity types and quota keys, as Kafka names them.
const (
	TypeUser     = "user"
	TypeClientID = "client-id"
	TypeIP       = "ip"

	ProducerByteRate       = "producer_byte_rate"
	ConsumerByteRate       = "consumer_byte_rate"
	RequestPercentage      = "request_percentage"
	ControllerMutationRate = "controller_mutation_rate"
)

// Component is one part of a quota entity: a type and a name, nil for the
// type's default entity (Kafka's <default>).
type Component struct {
	Type string  `json:"type"`
	Name *string `json:"name"`
}

// Entity is a quota entity: one component per type, in type order.
type Entity []Component

// normalize returns the entity sorted by type (a copy).
func normalize(e Entity) Entity {
	out := append(Entity(nil), e...)
	sort.Slice(out, func(i, j int) bool { return out[i].Type < out[j].Type })
	return out
}

// key is the entity's map key: each component as type, then "=" and the
// name or "\x01" for the default, NUL-separated.
func (e Entity) key() string {
	var b strings.Builder
	for _, c := range normalize(e) {
		b.WriteString(c.Type)
		if c.Name == nil {
			b.WriteByte(1)
		} else {
			b.WriteByte('=')
			b.WriteString(*c.Name)
		}
		b.WriteByte(0)
	}
	return b.String()
}

// name returns the component of type t: present, and its name (nil for the
// default).
func (e Entity) name(t string) (*string, bool) {
	for _, c := range e {
		if c.Type == t {
			return c.Name, true
		}
	}
	return nil, false
}

// Match types of a DescribeClientQuotas filter component (Kafka's values).
const (
	MatchExact   int8 = 0 // the named entity of the type
	MatchDefault int8 = 1 // the type's default entity
	MatchAny     int8 = 2 // any entity of the type (Kafka's MATCH_TYPE_SPECIFIED)
)

// Filter is one DescribeClientQuotas filter component, already validated.
type Filter struct {
	Type  string
	Match int8
	Name  string // for MatchExact
}

// matches reports whether an entity matches a filter, as Kafka's
// ClientQuotasImage.matches: every component must hold (exact: the type
// with that name; default: the type's default; any: the type present), and
// with strict the entity has no other type.
func matches(e Entity, filters []Filter, strict bool) bool {
	if strict && len(e) != len(filters) {
		return false
	}
	for _, f := range filters {
		n, ok := e.name(f.Type)
		switch {
		case !ok:
			return false
		case f.Match == MatchExact && (n == nil || *n != f.Name):
			return false
		case f.Match == MatchDefault && n != nil:
			return false
		}
	}
	return true
}
