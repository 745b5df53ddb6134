// Shared by OffsetCommit, OffsetFetch and OffsetDelete: the offsets
// scope's error mapping and logging (the group checks are
// groups.Service.ValidateCommit and OffsetDeleteCheck).

package bridge

import (
	"context"
	"errors"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kafka-iggy/kafka-iggy/bridge/groups"
	"github.com/kafka-iggy/kafka-iggy/bridge/offsets"
)

// offsetsScoped turns the retriable codes of the data scope (what the
// shared partition check answers) into the offsets scope's.
func offsetsScoped(code int16) int16 {
	switch code {
	case kerr.NotLeaderForPartition.Code, kerr.RequestTimedOut.Code:
		return kerr.CoordinatorLoadInProgress.Code
	}
	return code
}

// offsetErrCode maps an Iggy failure of an offsets write to its Kafka code
// and logs it: UNKNOWN_SERVER_ERROR at warn level with the Iggy code, the
// rest at debug level.
func offsetErrCode(ctx context.Context, log zerolog.Logger, rq *Request, err error, group, topic, msg string) int16 {
	code := kafkaCode(err, scopeOffsets)
	refused := errors.Is(err, offsets.ErrKind3Refused)
	switch {
	case refused:
		code = kerr.UnknownServerError.Code // not retried; logged once by the store
	case code == kerr.UnknownServerError.Code && errors.Is(err, offsets.ErrModeUndecided):
		code = kerr.CoordinatorLoadInProgress.Code // no login yet: retry
	}
	ev := log.Debug()
	if code == kerr.UnknownServerError.Code && ctx.Err() == nil && !refused {
		ev = log.Warn()
	}
	ev.Err(err).Uint64("conn_id", rq.ConnID).Int16("api_key", rq.Key).Int32("corr_id", rq.CorrID).
		Str("group_id", group).Str("topic", topic).Uint32("iggy_code", iggyCode(err)).Int16("error_code", code).Msg(msg)
	return code
}

// ticketOf is the ticket of a request's offsets writes (offsets.Ticket).
func ticketOf(rq *Request) offsets.Ticket {
	return offsets.Ticket{Conn: rq.ConnID, At: rq.Received, Corr: rq.CorrID}
}

// offsetsDeleter is the committed-offsets store as DeleteGroups uses it
// (groups.OffsetsDeleter): the store's deletes with the offsets scope's
// error mapping.
type offsetsDeleter struct{ store *offsets.Store }

// DeleteGroupOffsets deletes every committed offset of group;
// groups.ErrNoOffsets when there was none.
func (d offsetsDeleter) DeleteGroupOffsets(ctx context.Context, group string) error {
	err := d.store.DeleteGroupOffsets(ctx, group)
	if errors.Is(err, offsets.ErrNoOffsets) {
		return groups.ErrNoOffsets
	}
	return err
}

// OffsetsErrorCode maps a DeleteGroupOffsets failure.
func (offsetsDeleter) OffsetsErrorCode(err error) (int16, uint32) {
	return kafkaCode(err, scopeOffsets), iggyCode(err)
}
