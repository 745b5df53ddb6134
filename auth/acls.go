package auth

import (
	"context"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafka-iggy/kafka-iggy/bridge/iggy"
	icodec "github.com/kafka-iggy/kafka-iggy/codec/iggy"
)

// Kafka's answers without an authorizer (KafkaApis / AclApis).
const (
	NoAuthorizerDescribe = "No Authorizer is configured on the broker"
	NoAuthorizer         = "No Authorizer is configured."
	// ACLsReadOnly: with per-principal authorization the ACLs are the
	// principals' Iggy permissions, changed in Iggy.
	ACLsReadOnly = "ACLs are the principals' Iggy permissions (sasl.authorization principal): change them in Iggy"
)

// acl is one Kafka ACL binding (ALLOW, host *).
type acl struct {
	typ  kmsg.ACLResourceType
	name string
	op   kmsg.ACLOperation
}

// opsOf returns the Kafka operations Iggy's flags grant on a topic (or on
// every topic, name "*"), by the permissioner's rules (manage implies
// read, poll and send; read implies poll).
func opsOf(manage, read, poll, send bool) []kmsg.ACLOperation {
	var ops []kmsg.ACLOperation
	if manage || read {
		ops = append(ops, kmsg.ACLOperationDescribe, kmsg.ACLOperationDescribeConfigs)
	}
	if manage || read || poll {
		ops = append(ops, kmsg.ACLOperationRead)
	}
	if manage || send {
		ops = append(ops, kmsg.ACLOperationWrite)
	}
	if manage {
		ops = append(ops, kmsg.ACLOperationCreate, kmsg.ACLOperationDelete, kmsg.ACLOperationAlter, kmsg.ACLOperationAlterConfigs)
	}
	return ops
}

// aclsOf turns the Iggy permissions of a user into Kafka ACL bindings on
// the Kafka topics of stream streamID (topic ids named by names).
func aclsOf(p *icodec.Permissions, streamID uint32, names map[uint32]string) []acl {
	var out []acl
	add := func(typ kmsg.ACLResourceType, name string, ops []kmsg.ACLOperation) {
		for _, op := range ops {
			out = append(out, acl{typ, name, op})
		}
	}
	// Iggy has no group permissions: group coordination is not checked.
	add(kmsg.ACLResourceTypeGroup, "*", []kmsg.ACLOperation{kmsg.ACLOperationAll})
	if p == nil {
		return out
	}
	g := p.Global
	if g.ManageServers {
		add(kmsg.ACLResourceTypeCluster, "kafka-cluster", []kmsg.ACLOperation{kmsg.ACLOperationAlter, kmsg.ACLOperationAlterConfigs})
	}
	if g.ManageServers || g.ReadServers {
		add(kmsg.ACLResourceTypeCluster, "kafka-cluster", []kmsg.ACLOperation{kmsg.ACLOperationDescribe, kmsg.ACLOperationDescribeConfigs})
	}
	manage := g.ManageStreams || g.ManageTopics
	read := g.ReadStreams || g.ReadTopics
	poll, send := g.PollMessages, g.SendMessages
	var topics []icodec.TopicPermissions
	for _, sp := range p.Streams {
		if sp.StreamID != streamID {
			continue
		}
		manage = manage || sp.ManageStream || sp.ManageTopics
		read = read || sp.ReadStream || sp.ReadTopics
		poll, send = poll || sp.PollMessages, send || sp.SendMessages
		topics = sp.Topics
	}
	add(kmsg.ACLResourceTypeTopic, "*", opsOf(manage, read, poll, send))
	for _, tp := range topics {
		if name, ok := names[tp.TopicID]; ok {
			add(kmsg.ACLResourceTypeTopic, name, opsOf(tp.ManageTopic, tp.ReadTopic, tp.PollMessages, tp.SendMessages))
		}
	}
	return out
}

// matches reports whether binding a of principal passes the filter of req.
func (a acl) matches(req *kmsg.DescribeACLsRequest, principal string) bool {
	switch {
	case req.ResourceType != kmsg.ACLResourceTypeAny && req.ResourceType != a.typ,
		req.ResourcePatternType == kmsg.ACLResourcePatternTypePrefixed,
		req.ResourceName != nil && *req.ResourceName != a.name &&
			(req.ResourcePatternType != kmsg.ACLResourcePatternTypeMatch || a.name != "*"),
		req.Principal != nil && *req.Principal != principal,
		req.Host != nil && *req.Host != "*",
		req.Operation != kmsg.ACLOperationAny && req.Operation != a.op,
		req.PermissionType != kmsg.ACLPermissionTypeAny && req.PermissionType != kmsg.ACLPermissionTypeAllow:
		return false
	}
	return true
}

// DescribeACLs answers DescribeAcls with the Iggy permissions of the
// principal of ctx's connection as Kafka ACLs (User:<principal>, host *,
// ALLOW, LITERAL): GET_USER of its own Iggy user, run as that user (ctx is
// bound by Bind). stream is the Kafka topics' Iggy stream; its topic ids
// are named by a GET_TOPICS run as the sidecar. A principal logged in with
// a personal access token (its user name unknown here) answers no ACLs
// but the group one.
func DescribeACLs(ctx context.Context, client *iggy.Client, stream string, req *kmsg.DescribeACLsRequest, resp *kmsg.DescribeACLsResponse) {
	s := FromContext(ctx)
	var principal string
	var cred *iggy.Credential
	if s != nil {
		s.mu.Lock()
		principal, cred = s.principal, s.cred
		s.mu.Unlock()
	}
	if principal == "" {
		resp.ErrorCode, resp.ErrorMessage = kerr.SecurityDisabled.Code, ptr(NoAuthorizerDescribe)
		return
	}
	var perms *icodec.Permissions
	var sid uint32
	names := map[uint32]string{}
	if cred != nil && cred.Username != "" {
		var u icodec.UserDetails
		err := client.Do(ctx, &icodec.GetUserRequest{UserID: icodec.Identifier{Kind: icodec.IdentifierKindString, Value: []byte(cred.Username)}}, &u)
		if err == nil && u.Permissions != nil {
			perms = &u.Permissions.Permissions
		}
		if err != nil && !iggy.IsUnauthorized(err) {
			resp.ErrorCode, resp.ErrorMessage = kerr.UnknownServerError.Code, ptr("reading the principal's Iggy permissions failed")
			return
		}
		var st icodec.StreamDetails
		sidecar := iggy.Sidecar(ctx)
		ref := iggy.TopicRef{Stream: stream}
		if client.Do(sidecar, &icodec.GetStreamRequest{StreamID: ref.StreamID()}, &st) == nil {
			sid = st.ID
			for _, t := range st.Topics {
				names[t.ID] = t.Name
			}
		}
	}
	type key struct {
		typ  kmsg.ACLResourceType
		name string
	}
	groups := map[key][]kmsg.DescribeACLsResponseResourceACL{}
	full := "User:" + principal
	for _, a := range aclsOf(perms, sid, names) {
		if !a.matches(req, full) {
			continue
		}
		ra := kmsg.NewDescribeACLsResponseResourceACL()
		ra.Principal, ra.Host, ra.Operation, ra.PermissionType = full, "*", a.op, kmsg.ACLPermissionTypeAllow
		k := key{a.typ, a.name}
		groups[k] = append(groups[k], ra)
	}
	keys := make([]key, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].typ != keys[j].typ {
			return keys[i].typ < keys[j].typ
		}
		return keys[i].name < keys[j].name
	})
	for _, k := range keys {
		r := kmsg.NewDescribeACLsResponseResource()
		r.ResourceType, r.ResourceName, r.ResourcePatternType, r.ACLs = k.typ, k.name, kmsg.ACLResourcePatternTypeLiteral, groups[k]
		resp.Resources = append(resp.Resources, r)
	}
}
