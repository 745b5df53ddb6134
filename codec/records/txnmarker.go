package records

import (
	"encoding/binary"

	iggy "github.com/kafka-iggy/kafka-iggy/codec/iggy"
)

// MarkerPayload is the payload of a transaction's end marker (txn.go).
var MarkerPayload = []byte{0}

// AppendTxnMarkerHeaders appends the user-headers block of an end marker
// (txn.go): kafka.v = 0x01 first, HeaderControl = ctl (ControlCommit or
// ControlAbort), HeaderTxn = m, HeaderCoordEpoch = coordEpoch (int32
// little-endian).
func AppendTxnMarkerHeaders(dst []byte, ctl byte, m TxnMark, coordEpoch int32) []byte {
	dst = iggy.AppendHeader(dst, recHdrVersion, iggy.HeaderKindRaw, recValV1)
	dst = iggy.AppendHeader(dst, HeaderControl, iggy.HeaderKindRaw, []byte{ctl})
	dst = iggy.AppendHeader(dst, HeaderTxn, iggy.HeaderKindRaw, AppendTxnMark(make([]byte, 0, TxnMarkLen), m))
	return iggy.AppendHeader(dst, HeaderCoordEpoch, iggy.HeaderKindRaw, binary.LittleEndian.AppendUint32(nil, uint32(coordEpoch)))
}
