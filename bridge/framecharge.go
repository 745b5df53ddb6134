package bridge

// defaultFrameCharge is the memory charge of a row that sets none
// (API.FrameCharge 0): how many times its frame's size a request draws
// from the budget while it is decoded, served and its response built. The
// front door reserves it before it takes the frame off the socket, so the
// memory a request makes the process hold is charged before any of it
// exists, whatever the counts on the wire say. 32 covers kmsg's decoding
// of any request (at most 16 bytes of structs per wire byte of the
// smallest entry: AlterConfigs' resources 14x, JoinGroup's protocols and
// SyncGroup's assignments 12x) and an answer entry per entry; the rows
// whose answers amplify more set their own (measured: cmd/kafka-iggy's
// amplify process test; TestFrameChargeCoversDecoding checks decoding
// takes at most half of each row's charge).
const defaultFrameCharge = 32
