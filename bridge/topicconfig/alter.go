// Planning a change: the options CreateTopics sends for a topic's
// configs, and the UPDATE_TOPIC an alter needs (with the held configs it
// changes).

package topicconfig

import (
	"fmt"
	"math"
	"math/bits"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
)

// Value is one Kafka config as a request names it.
type Value struct {
	Name  string
	Value *string
}

// CreateOptions maps the configs of one CreateTopics topic onto the
// gateway's default options: defaults first (as configured, String values
// the server parses), then each Kafka config in its Iggy option's
// canonical kind (a config named twice: the last wins, as Kafka does). It
// returns the options to send, the resulting set (what the topic will
// hold) and the first refusal, which names its key.
func CreateOptions(defaults icodec.Options, configs []Value, partitions uint32) (icodec.Options, Set, *Error) {
	set := defaultOptionSet()
	if o, st := set.applyOptions(defaults); st != 0 {
		return nil, set, invalidConfig("Gateway default topic option %s=%s is refused by Iggy (%s)", o.Key, o.Value, st)
	}
	mapped := map[string]icodec.Option{}
	for _, c := range configs {
		if c.Value == nil {
			return nil, set, invalidConfig("Null value not supported for topic configs: %s", c.Name)
		}
		tc, ok := lookupTopicConfig(c.Name)
		if !ok {
			return nil, set, unknownConfig(c.Name)
		}
		if hs, ok := heldConfigs[tc.name]; ok {
			v, reason := hs.check(*c.Value)
			if reason != "" {
				return nil, set, invalidValue(c.Name, *c.Value, reason)
			}
			set.held[tc.name] = v
			continue
		}
		spec := tc.spec()
		if spec == nil {
			return nil, set, unknownConfig(c.Name)
		}
		v, reason := tc.toIggy(*c.Value, spec, partitions)
		if reason != "" {
			return nil, set, invalidValue(c.Name, *c.Value, reason)
		}
		set.set(spec, v)
		mapped[spec.Key] = encodeOption(spec, v)
	}
	if err := set.checkTopicSize(partitions); err != nil {
		return nil, set, err
	}
	if err := set.checkPreallocation(partitions); err != nil {
		return nil, set, err
	}
	out := make(icodec.Options, 0, len(defaults)+len(mapped))
	for _, o := range defaults {
		if _, over := mapped[o.Key]; !over {
			out = append(out, o)
		}
	}
	for i := range icodec.TopicOptions {
		if o, ok := mapped[icodec.TopicOptions[i].Key]; ok {
			out = append(out, o)
		}
	}
	return out, set, nil
}

// AlterOp is one config change of AlterConfigs or IncrementalAlterConfigs.
type AlterOp struct {
	Name  string
	Op    kmsg.IncrementalAlterConfigOp
	Value *string
}

// PlanAlter applies ops to a topic's current options. With replace
// (AlterConfigs, key 33), every updatable key the ops do not name goes back
// to its default, because Kafka's non-incremental alter replaces the whole
// set of dynamic configs. "Its default" is what a Kafka topic without an
// override falls back to: the broker's config, here the gateway's default
// option for the key (bd) when one is configured, else Iggy's default (a
// default marker). A create-only key may be "changed" only to its current
// value (a no-op, so read-modify-write tools keep working); an AlterConfigs
// that omits an explicitly set create-only key keeps it, since Iggy cannot
// reset it. It returns the UPDATE_TOPIC options (only updatable keys), the
// resulting set and the first refusal.
func PlanAlter(cur Set, partitions uint32, ops []AlterOp, replace bool, bd BrokerDefaults) (icodec.Options, Set, *Error) {
	next := cur.clone()
	resetKey := func(spec *icodec.OptionSpec) {
		if bd.set.explicit[spec.Key] && !isGatewayOption(spec) {
			next.set(spec, bd.set.vals[spec.Key])
		} else {
			next.reset(spec)
		}
	}
	touched := map[string]bool{}
	seen := map[string]bool{}
	for _, op := range ops {
		if seen[op.Name] {
			return nil, next, &Error{Code: kerr.InvalidRequest.Code, Msg: "Error due to duplicate config keys"}
		}
		seen[op.Name] = true
		tc, ok := lookupTopicConfig(op.Name)
		if !ok {
			return nil, next, unknownConfig(op.Name)
		}
		if op.Value == nil && op.Op != kmsg.IncrementalAlterConfigOpDelete {
			return nil, next, &Error{Code: kerr.InvalidRequest.Code, Msg: "Null value not supported for : " + op.Name}
		}
		switch op.Op {
		case kmsg.IncrementalAlterConfigOpSet, kmsg.IncrementalAlterConfigOpDelete:
		case kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
			if tc.typ != kmsg.ConfigTypeList {
				return nil, next, invalidConfig("Can't %s to key %s because its type is not LIST.", op.Op, op.Name)
			}
		default:
			return nil, next, &Error{Code: kerr.InvalidRequest.Code, Msg: fmt.Sprintf("Unknown operations type %d", op.Op)}
		}
		if hs, ok := heldConfigs[tc.name]; ok {
			touched[tc.name] = true
			if op.Op == kmsg.IncrementalAlterConfigOpDelete {
				delete(next.held, tc.name)
				continue
			}
			v := *op.Value
			if op.Op != kmsg.IncrementalAlterConfigOpSet {
				v = listOp(next.heldValue(tc.name), v, op.Op)
			}
			cv, reason := hs.check(v)
			if reason != "" {
				return nil, next, invalidValue(op.Name, v, reason)
			}
			next.held[tc.name] = cv
			continue
		}
		spec := tc.spec()
		if spec == nil {
			return nil, next, unknownConfig(op.Name)
		}
		if op.Op == kmsg.IncrementalAlterConfigOpDelete {
			if !spec.Updatable {
				if cur.vals[spec.Key] != bd.set.vals[spec.Key] {
					return nil, next, invalidConfig("Cannot delete %s: Iggy sets %s at topic creation only", op.Name, spec.Key)
				}
				continue
			}
			resetKey(spec)
			touched[spec.Key] = true
			continue
		}
		v, reason := tc.toIggy(*op.Value, spec, partitions)
		if reason != "" {
			return nil, next, invalidValue(op.Name, *op.Value, reason)
		}
		if !spec.Updatable {
			if v != cur.vals[spec.Key] {
				return nil, next, invalidConfig("Cannot alter %s: Iggy sets %s at topic creation only", op.Name, spec.Key)
			}
			continue
		}
		next.set(spec, v)
		touched[spec.Key] = true
	}
	if replace {
		for i := range gatewayOptions {
			if !touched[gatewayOptions[i].Key] {
				next.reset(&gatewayOptions[i])
			}
		}
		for k := range next.held {
			if !touched[k] {
				delete(next.held, k)
			}
		}
	}
	var patch icodec.Options
	for i := range icodec.TopicOptions {
		spec := &icodec.TopicOptions[i]
		if !spec.Updatable || !mappedOption(spec.Key) {
			continue
		}
		if !touched[spec.Key] {
			if !replace {
				continue
			}
			resetKey(spec)
		}
		if next.explicit[spec.Key] {
			patch = append(patch, encodeOption(spec, next.vals[spec.Key]))
		} else {
			patch = append(patch, resetOption(spec))
		}
	}
	if err := next.checkTopicSize(partitions); err != nil {
		return nil, next, err
	}
	return patch, next, nil
}

// mappedOption reports whether an Iggy option has a Kafka name.
func mappedOption(key string) bool {
	for i := range topicConfigs {
		if topicConfigs[i].option == key {
			return true
		}
	}
	return false
}

// ScaledTopicSize keeps retention.bytes (per partition) unchanged when a
// topic with options explicit and derived grows from partitions from to
// to: it returns the max_topic_size option (per topic) scaled by the same
// factor and its value, and false when there is nothing to change (the
// key not set explicitly, unlimited, or not growing).
func ScaledTopicSize(explicit, derived icodec.Options, from, to uint32) (icodec.Option, uint64, bool) {
	set := setOf(explicit, derived)
	old := set.vals[optMaxTopicSize]
	if !set.explicit[optMaxTopicSize] || old == math.MaxUint64 || from == 0 {
		return icodec.Option{}, 0, false
	}
	spec, ok := icodec.LookupOption(icodec.TopicOptions, optMaxTopicSize)
	if !ok {
		return icodec.Option{}, 0, false
	}
	hi, lo := bits.Mul64(old/uint64(from), uint64(to))
	next := lo
	if hi != 0 || lo == math.MaxUint64 {
		next = math.MaxUint64
	}
	if next <= old {
		return icodec.Option{}, 0, false
	}
	return encodeOption(spec, next), next, true
}
