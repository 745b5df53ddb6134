package bridge

import "github.com/twmb/franz-go/pkg/kmsg"

// apiFrameCharges is, per API, how many times its frame's size a request
// draws from the memory budget while it is decoded, served and its
// response built: Bridge.apis sets each row's API.FrameCharge to it (a
// row's own FrameCharge counts when larger). The front door reserves it before it takes the frame off the
// socket, so the memory a request makes the process hold is charged
// before any of it exists, whatever the counts on the wire say.
//
// The factors bound the bytes per wire byte of the smallest entry an API's
// arrays can carry (measured; see cmd/kafka-iggy's amplify process test):
// decoding (kmsg's structs and strings: a 3-byte group name is a 16-byte
// string header plus its bytes), the handler's response structs and the
// encoded response with its append growth; decoding takes at most half
// of each (TestFrameChargeCoversDecoding). Keys not listed draw
// defaultFrameCharge.
var apiFrameCharges = map[int16]int64{
	// 5 wire bytes name the broker; its encoded configs with synonyms
	// are ~2,760 bytes (x2 while the reply buffer grows).
	kmsg.DescribeConfigs.Int16(): 1200,
	// A 27-byte topic answers (v5+) its ~20 configs, and the handler
	// builds them (~4 KB) for validated topics at every version.
	kmsg.CreateTopics.Int16(): 300,
	// A 2-byte key answers a coordinator entry (struct ~100 bytes).
	kmsg.FindCoordinator.Int16(): 64,
	// A 3-byte group name answers a described group (struct ~160 bytes).
	kmsg.DescribeGroups.Int16(): 64,
	// A 4-byte partition id answers a partition entry (struct ~56 bytes,
	// encoded 20).
	kmsg.OffsetFetch.Int16(): 24,
	// A 33-byte partition (v12) answers a partition entry (struct ~140
	// bytes, encoded ~30); the record bytes draw from the budget on their
	// own.
	kmsg.Fetch.Int16(): 16,
	// The smallest records (7 bytes) become Iggy messages of ~90 bytes
	// (13x), besides the frame itself.
	kmsg.Produce.Int16(): 14,
	// ApiVersions' answer is the fixed table.
	kmsg.ApiVersions.Int16(): 1,
}

// defaultFrameCharge covers kmsg's decoding of any request (at most 16
// bytes of structs per wire byte of the smallest entry: AlterConfigs'
// resources 14x, JoinGroup's protocols and SyncGroup's assignments 12x;
// TestFrameChargeCoversDecoding) and an answer entry per entry.
const defaultFrameCharge = 32

// frameCharge is the charge factor of key (see apiFrameCharges).
func frameCharge(key int16) int64 {
	if c, ok := apiFrameCharges[key]; ok {
		return c
	}
	return defaultFrameCharge
}
