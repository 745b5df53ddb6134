package embedded

import "github.com/kafka-iggy/kafka-iggy/codec/iggy"

// rootUserID is the id of the root user, which holds every permission.
const rootUserID = 0

// access is the permission view of one session's user (§1.11, §2.13),
// following the real server's rules: each check lists the global,
// per-stream and per-topic flags that grant it.
type access struct {
	root bool
	p    *iggy.Permissions // nil: no permissions at all
}

// accessOf returns the permission view of sess. Caller holds Server.mu.
func (s *Server) accessOf(sess *session) access {
	if sess == nil {
		return access{}
	}
	if sess.userID == rootUserID {
		return access{root: true}
	}
	u := s.users[sess.userID]
	if u == nil {
		return access{}
	}
	return access{p: u.perms}
}

func (a access) global() iggy.GlobalPermissions {
	if a.p == nil {
		return iggy.GlobalPermissions{}
	}
	return a.p.Global
}

// scoped returns the user's permissions on a stream and on one of its
// topics (either may be nil).
func (a access) scoped(streamID, topicID uint32) (*iggy.StreamPermissions, *iggy.TopicPermissions) {
	if a.p == nil {
		return nil, nil
	}
	for i := range a.p.Streams {
		sp := &a.p.Streams[i]
		if sp.StreamID != streamID {
			continue
		}
		for j := range sp.Topics {
			if sp.Topics[j].TopicID == topicID {
				return sp, &sp.Topics[j]
			}
		}
		return sp, nil
	}
	return nil, nil
}

// noTopic is a topic id no permission entry uses for stream-level checks.
const noTopic = ^uint32(0)

// readServers: GET_STATS, GET_CLIENT(S), GET_SNAPSHOT_FILE.
func (a access) readServers() bool {
	g := a.global()
	return a.root || g.ManageServers || g.ReadServers
}

func (a access) manageUsers() bool { return a.root || a.global().ManageUsers }

func (a access) readUsers() bool {
	g := a.global()
	return a.root || g.ManageUsers || g.ReadUsers
}

func (a access) manageStreams() bool { return a.root || a.global().ManageStreams }

func (a access) readStreams() bool {
	g := a.global()
	return a.root || g.ManageStreams || g.ReadStreams
}

func (a access) manageStream(sid uint32) bool {
	if a.manageStreams() {
		return true
	}
	sp, _ := a.scoped(sid, noTopic)
	return sp != nil && sp.ManageStream
}

func (a access) readStream(sid uint32) bool {
	if a.readStreams() {
		return true
	}
	sp, _ := a.scoped(sid, noTopic)
	return sp != nil && (sp.ManageStream || sp.ReadStream)
}

// readTopics: GET_TOPICS of stream sid (Permissioner::get_topics).
func (a access) readTopics(sid uint32) bool {
	g := a.global()
	if a.root || g.ReadStreams || g.ManageStreams || g.ManageTopics || g.ReadTopics {
		return true
	}
	sp, _ := a.scoped(sid, noTopic)
	return sp != nil && (sp.ManageStream || sp.ReadStream || sp.ManageTopics || sp.ReadTopics)
}

// readTopic: GET_TOPIC and the consumer-group commands.
func (a access) readTopic(sid, tid uint32) bool {
	if a.readTopics(sid) {
		return true
	}
	_, tp := a.scoped(sid, tid)
	return tp != nil && (tp.ManageTopic || tp.ReadTopic)
}

// createTopic: CREATE_TOPIC in stream sid (Permissioner::create_topic).
func (a access) createTopic(sid uint32) bool {
	g := a.global()
	if a.root || g.ManageStreams || g.ManageTopics {
		return true
	}
	sp, _ := a.scoped(sid, noTopic)
	return sp != nil && (sp.ManageStream || sp.ManageTopics)
}

// manageTopic: update, delete, purge, partitions, segments.
func (a access) manageTopic(sid, tid uint32) bool {
	if a.createTopic(sid) {
		return true
	}
	_, tp := a.scoped(sid, tid)
	return tp != nil && tp.ManageTopic
}

// pollMessages: POLL_MESSAGES and the consumer-offset commands
// (Permissioner::poll_messages, core/metadata/src/permissioner/
// permissioner_rules/messages.rs: manage_streams -> read_streams ->
// read_topics -> poll_messages, globally or per stream or topic).
func (a access) pollMessages(sid, tid uint32) bool {
	g := a.global()
	if a.root || g.PollMessages || g.ReadTopics || g.ManageTopics || g.ReadStreams || g.ManageStreams {
		return true
	}
	sp, tp := a.scoped(sid, tid)
	return sp != nil && (sp.PollMessages || sp.ManageStream || sp.ReadStream || sp.ManageTopics || sp.ReadTopics) ||
		tp != nil && (tp.PollMessages || tp.ReadTopic || tp.ManageTopic)
}

// sendMessages: SEND_MESSAGES (Permissioner::append_messages:
// manage_streams -> manage_topics -> send_messages).
func (a access) sendMessages(sid, tid uint32) bool {
	g := a.global()
	if a.root || g.SendMessages || g.ManageStreams || g.ManageTopics {
		return true
	}
	sp, tp := a.scoped(sid, tid)
	return sp != nil && (sp.SendMessages || sp.ManageStream || sp.ManageTopics) ||
		tp != nil && (tp.SendMessages || tp.ManageTopic)
}

// allPermissions is the permission set reported for the root user.
func allPermissions() *iggy.Permissions {
	return &iggy.Permissions{Global: iggy.GlobalPermissions{
		ManageServers: true, ReadServers: true, ManageUsers: true, ReadUsers: true,
		ManageStreams: true, ReadStreams: true, ManageTopics: true, ReadTopics: true,
		PollMessages: true, SendMessages: true,
	}}
}
