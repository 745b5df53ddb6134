package records

import "encoding/binary"

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
