package records

import "testing"

func TestTxnMarkRoundTrip(t *testing.T) {
	m := TxnMark{ProducerID: 1<<62 | 3<<40 | 77, Epoch: 32767, Seq: 0xfffffffe}
	b := AppendTxnMark(nil, m)
	if len(b) != TxnMarkLen {
		t.Fatalf("len %d", len(b))
	}
	got, ok := ParseTxnMark(b)
	if !ok || got != m {
		t.Fatalf("got %+v %v, want %+v", got, ok, m)
	}
	if _, ok := ParseTxnMark(b[:13]); ok {
		t.Fatal("13 bytes parsed")
	}
	if _, ok := ParseTxnMark(append(b, 0)); ok {
		t.Fatal("15 bytes parsed")
	}
}
