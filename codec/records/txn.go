package records

import (
	"encoding/binary"

	"github.com/kafka-iggy/kafka-iggy/codec/iggy"
)

// Transactions on Iggy (issue 25; docs/KAFKA-ON-IGGY.md): the contract between the
// sidecar that writes a transaction's records, the coordinator that writes its end
// markers, and every sidecar that reads them.
//
// A record produced inside a transaction is one Iggy message as in §2, plus the user
// header HeaderTxn (Raw) holding its TxnMark. The end of a transaction in a partition
// is one Iggy message of its own, the marker: payload 0x00 and the user headers
// kafka.v = 0x01 (first), HeaderControl = ControlCommit or ControlAbort (Raw, 1 byte),
// HeaderTxn = the transaction's TxnMark and HeaderCoordEpoch = the coordinator epoch
// (Raw, int32 little-endian). It takes one offset, as Kafka's control batch does, and
// Fetch shows it as one.
const (
	HeaderTxn        = "kafka.t"
	HeaderControl    = "kafka.ctl"
	HeaderCoordEpoch = "kafka.ce"

	ControlCommit byte = 'C'
	ControlAbort  byte = 'A'

	// TxnMarkLen is the length of a HeaderTxn value.
	TxnMarkLen = 14
)

// TxnMark names one transaction: the producer id and epoch that ran it and the
// coordinator's sequence number of the transaction for that producer (assigned when
// the transaction starts), so each transaction is told apart even when the epoch is
// not bumped between transactions (transaction protocol v1).
type TxnMark struct {
	ProducerID int64
	Epoch      int16
	Seq        uint32
}

// AppendTxnMark appends m's 14-byte encoding: producer id u64, epoch u16, sequence
// u32, each little-endian.
func AppendTxnMark(dst []byte, m TxnMark) []byte {
	dst = binary.LittleEndian.AppendUint64(dst, uint64(m.ProducerID))
	dst = binary.LittleEndian.AppendUint16(dst, uint16(m.Epoch))
	return binary.LittleEndian.AppendUint32(dst, m.Seq)
}

// ParseTxnMark reads a HeaderTxn value; ok is false unless b is exactly TxnMarkLen bytes.
func ParseTxnMark(b []byte) (m TxnMark, ok bool) {
	if len(b) != TxnMarkLen {
		return TxnMark{}, false
	}
	m.ProducerID = int64(binary.LittleEndian.Uint64(b))
	m.Epoch = int16(binary.LittleEndian.Uint16(b[8:]))
	m.Seq = binary.LittleEndian.Uint32(b[10:])
	return m, true
}

// TxnInfo is what a message's headers say about transactions: the mark of the
// transaction that wrote it (every message with HeaderTxn), and for an end
// marker its kind (ControlCommit or ControlAbort; 0 for a data record) and the
// coordinator epoch that wrote it.
type TxnInfo struct {
	Mark       TxnMark
	Control    byte
	CoordEpoch int32
}

// TxnHeaderState classifies an Iggy message for the transaction readers.
type TxnHeaderState uint8

const (
	// TxnNone: no HeaderTxn (or no mapping version 1): not transactional.
	TxnNone TxnHeaderState = iota
	// TxnData: a record of the transaction named by TxnInfo.Mark.
	TxnData
	// TxnMarker: the end marker of that transaction (TxnInfo.Control).
	TxnMarker
	// TxnBad: the transaction headers break the contract (a HeaderTxn
	// that is not TxnMarkLen bytes, repeated, a HeaderControl other than
	// one byte C or A, a marker without HeaderTxn or HeaderCoordEpoch, a
	// HeaderCoordEpoch not 4 bytes) or the user-headers block does not
	// parse. Fetch skips such a message; the tracker ignores it.
	TxnBad
)

// ReadTxnHeaders reads the transaction headers from a raw Iggy user-headers
// block (the contract above). It does not allocate.
func ReadTxnHeaders(headers []byte) (TxnInfo, TxnHeaderState) {
	var info TxnInfo
	var version, txn, ctl, ce bool
	it := iggy.NewHeaderIter(headers)
	for it.Next() {
		_, k := it.Key()
		_, v := it.Value()
		switch string(k) {
		case recHdrVersion:
			if version || len(v) != 1 || v[0] != mappingVersion {
				return info, TxnNone // not ours to read: Fetch decides
			}
			version = true
		case HeaderTxn:
			m, ok := ParseTxnMark(v)
			if txn || !ok {
				return info, TxnBad
			}
			info.Mark, txn = m, true
		case HeaderControl:
			if ctl || len(v) != 1 || (v[0] != ControlCommit && v[0] != ControlAbort) {
				return info, TxnBad
			}
			info.Control, ctl = v[0], true
		case HeaderCoordEpoch:
			if ce || len(v) != 4 {
				return info, TxnBad
			}
			info.CoordEpoch, ce = int32(binary.LittleEndian.Uint32(v)), true
		}
	}
	switch {
	case it.Err() != nil:
		return info, TxnBad
	case !version:
		return TxnInfo{}, TxnNone
	case ctl && (!txn || !ce):
		return info, TxnBad
	case ctl:
		return info, TxnMarker
	case ce:
		return info, TxnBad
	case txn:
		return info, TxnData
	}
	return TxnInfo{}, TxnNone
}

// AppendControlKey appends a Kafka control record's key: version 0 and the
// type (0 abort, 1 commit), both int16 big-endian, as Kafka's
// EndTransactionMarker writes it.
func AppendControlKey(dst []byte, control byte) []byte {
	typ := uint16(0)
	if control == ControlCommit {
		typ = 1
	}
	return binary.BigEndian.AppendUint16(binary.BigEndian.AppendUint16(dst, 0), typ)
}

// AppendControlValue appends a Kafka control record's value: version 0
// (int16) and the coordinator epoch (int32), big-endian.
func AppendControlValue(dst []byte, coordEpoch int32) []byte {
	return binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint16(dst, 0), uint32(coordEpoch))
}
