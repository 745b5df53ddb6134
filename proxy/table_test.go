package proxy

// Black-box tests of the bridge's dispatch contract (bridge/api.go,
// bridge/18_api_versions.go), kept in this package so they run while the
// rest of package bridge is being written.

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafka-iggy/kafka-iggy/bridge"
)

func okHandler(_ context.Context, rq *bridge.Request) (kmsg.Response, error) {
	return rq.Msg.ResponseKind(), nil
}

func TestNewTableReportsEveryProblem(t *testing.T) {
	_, err := bridge.NewTable(
		bridge.API{Key: 3, MaxVersion: 12, Handle: okHandler},
		bridge.API{Key: 3, MaxVersion: 12, Handle: okHandler},               // duplicate
		bridge.API{Key: 0, MinVersion: 5, MaxVersion: 4, Handle: okHandler}, // inverted
		bridge.API{Key: 1, MaxVersion: 99, Handle: okHandler},               // beyond kmsg
		bridge.API{Key: 12, MaxVersion: 4},                                  // no handler
		bridge.API{Key: 500, MaxVersion: 0, Handle: okHandler},              // unknown key
		bridge.API{Key: -1, MaxVersion: 0, Handle: okHandler},               // negative key
	)
	if err == nil {
		t.Fatal("NewTable accepted a bad table")
	}
	for _, want := range []error{bridge.ErrDuplicateAPI, bridge.ErrUnsupportedVersion, bridge.ErrNoHandler, bridge.ErrUnknownAPI} {
		if !errors.Is(err, want) {
			t.Errorf("missing %v in %v", want, err)
		}
	}
	var joined interface{ Unwrap() []error }
	if !errors.As(err, &joined) || len(joined.Unwrap()) != 6 {
		t.Errorf("want 6 joined problems, got %v", err)
	}
}

func TestTableLookupAndAll(t *testing.T) {
	var tab *bridge.Table
	tab, err := bridge.NewTable(
		bridge.API{Key: 12, MaxVersion: 4, Handle: okHandler},
		bridge.ApiVersionsAPI(func() *bridge.Table { return tab }),
		bridge.API{Key: 3, MinVersion: 1, MaxVersion: 12, Handle: okHandler},
	)
	if err != nil {
		t.Fatal(err)
	}
	if lo, hi, ok := tab.Versions(3); !ok || lo != 1 || hi != 12 {
		t.Fatalf("Versions(3) = %d, %d, %v", lo, hi, ok)
	}
	for _, k := range []int16{-1, 0, 94, 95, 1000, 32767} {
		if _, _, ok := tab.Versions(k); ok {
			t.Fatalf("Versions(%d) ok", k)
		}
		if _, ok := tab.Lookup(k); ok {
			t.Fatalf("Lookup(%d) ok", k)
		}
	}
	if a, ok := tab.Lookup(12); !ok || a.Name != "Heartbeat" {
		t.Fatalf("Lookup(12) = %+v (name defaults to kmsg's)", a)
	}
	all := tab.All()
	keys := make([]int16, len(all))
	for i, a := range all {
		keys[i] = a.Key
	}
	if !slices.Equal(keys, []int16{3, 12, 18}) {
		t.Fatalf("All keys %v", keys)
	}
	all[0].Key = 99 // a copy
	if tab.All()[0].Key != 3 {
		t.Fatal("All returned the table's own slice")
	}
}

func TestTableDispatch(t *testing.T) {
	wrongKey := func(context.Context, *bridge.Request) (kmsg.Response, error) {
		return kmsg.NewPtrMetadataResponse(), nil
	}
	wrongVersion := func(_ context.Context, rq *bridge.Request) (kmsg.Response, error) {
		r := kmsg.NewPtrHeartbeatResponse()
		r.Version = rq.Version + 1
		return r, nil
	}
	none := func(context.Context, *bridge.Request) (kmsg.Response, error) { return nil, nil }
	tab, err := bridge.NewTable(
		bridge.API{Key: 12, MaxVersion: 4, Handle: wrongKey},
		bridge.API{Key: 13, MaxVersion: 5, Handle: wrongVersion},
		bridge.API{Key: 0, MinVersion: 3, MaxVersion: 12, Handle: none},
		bridge.API{Key: 3, MaxVersion: 12, Handle: okHandler},
	)
	if err != nil {
		t.Fatal(err)
	}
	rq := func(key, version int16) *bridge.Request {
		m := kmsg.RequestForKey(key)
		m.SetVersion(version)
		return &bridge.Request{Key: key, Version: version, Msg: m}
	}
	ctx := context.Background()
	cases := []struct {
		name string
		rq   *bridge.Request
		want error
	}{
		{"nil request", nil, bridge.ErrBadRequest},
		{"nil body", &bridge.Request{Key: 3}, bridge.ErrBadRequest},
		{"unknown key", rq(1, 4), bridge.ErrUnknownAPI},
		{"version too high", rq(3, 13), bridge.ErrUnsupportedVersion},
		{"version too low", rq(0, 2), bridge.ErrUnsupportedVersion},
		{"body of another key", &bridge.Request{Key: 3, Version: 1, Msg: kmsg.NewPtrHeartbeatRequest()}, bridge.ErrBadRequest},
		{"response of another key", rq(12, 1), bridge.ErrResponseMismatch},
		{"response of another version", rq(13, 1), bridge.ErrResponseMismatch},
	}
	for _, tc := range cases {
		if _, err := tab.Dispatch(ctx, tc.rq); !errors.Is(err, tc.want) {
			t.Errorf("%s: err %v, want %v", tc.name, err, tc.want)
		}
	}
	if resp, err := tab.Dispatch(ctx, rq(0, 9)); resp != nil || err != nil {
		t.Errorf("no-response handler: %v, %v", resp, err)
	}
	resp, err := tab.Dispatch(ctx, rq(3, 12))
	if err != nil || resp.Key() != 3 || resp.GetVersion() != 12 {
		t.Errorf("metadata: %v, %v", resp, err)
	}
}

func TestApiVersionsHandler(t *testing.T) {
	var tab *bridge.Table
	tab, err := bridge.NewTable(
		bridge.ApiVersionsAPI(func() *bridge.Table { return tab }),
		bridge.API{Key: 3, MaxVersion: 12, Handle: okHandler},
	)
	if err != nil {
		t.Fatal(err)
	}
	for v := int16(0); v <= bridge.ApiVersionsMaxVersion; v++ {
		resp, err := tab.Dispatch(context.Background(), &bridge.Request{Key: 18, Version: v, Msg: apiVersionsReq(v)})
		if err != nil {
			t.Fatal(err)
		}
		r := resp.(*kmsg.ApiVersionsResponse)
		if r.Version != v || r.ErrorCode != 0 || len(r.ApiKeys) != 2 ||
			r.ApiKeys[0].ApiKey != 3 || r.ApiKeys[0].MaxVersion != 12 ||
			r.ApiKeys[1].ApiKey != 18 || r.ApiKeys[1].MaxVersion != bridge.ApiVersionsMaxVersion {
			t.Fatalf("v%d: %+v", v, r)
		}
		if r.FinalizedFeaturesEpoch != -1 || len(r.FinalizedFeatures) != 0 || len(r.SupportedFeatures) != 0 {
			t.Fatalf("v%d: features %+v", v, r)
		}
	}
	fb := bridge.UnsupportedApiVersionsResponse(0, 4)
	if fb.Version != 0 || fb.ErrorCode != kerr.UnsupportedVersion.Code || len(fb.ApiKeys) != 1 ||
		fb.ApiKeys[0].ApiKey != 18 || fb.ApiKeys[0].MinVersion != 0 || fb.ApiKeys[0].MaxVersion != 4 {
		t.Fatalf("fallback %+v", fb)
	}
}

// TestTableFrameCharge: the budget charge of a row's frames is its
// FrameCharge, at least 1; a key outside the table is charged once.
func TestTableFrameCharge(t *testing.T) {
	tab, err := bridge.NewTable(
		bridge.API{Key: 0, MinVersion: 3, MaxVersion: 12, Handle: okHandler, FrameCharge: 2},
		bridge.API{Key: 3, MaxVersion: 12, Handle: okHandler},
	)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		key  int16
		want int64
	}{{0, 2}, {3, 1}, {12, 1}, {-1, 1}, {int16(kmsg.MaxKey) + 1, 1}} {
		if got := tab.FrameCharge(tc.key); got != tc.want {
			t.Errorf("FrameCharge(%d) = %d, want %d", tc.key, got, tc.want)
		}
	}
}

// vectored is a VectoredResponse of the wrong version that records its
// Release.
type vectored struct {
	*kmsg.HeartbeatResponse
	released int
}

func (v *vectored) AppendVectored(dst []byte, _ int) []byte { return v.AppendTo(dst) }
func (v *vectored) Cuts() []bridge.Cut                      { return nil }
func (v *vectored) Release()                                { v.released++ }

// TestTableDispatchReleasesMismatchedVectored: a VectoredResponse that
// does not match its request is released where the mismatch is found (the
// front door never sees it).
func TestTableDispatchReleasesMismatchedVectored(t *testing.T) {
	v := &vectored{HeartbeatResponse: kmsg.NewPtrHeartbeatResponse()}
	tab, err := bridge.NewTable(bridge.API{Key: 12, MaxVersion: 4, Handle: func(_ context.Context, rq *bridge.Request) (kmsg.Response, error) {
		v.Version = rq.Version + 1
		return v, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	m := kmsg.NewPtrHeartbeatRequest()
	m.Version = 1
	if _, err := tab.Dispatch(context.Background(), &bridge.Request{Key: 12, Version: 1, Msg: m}); !errors.Is(err, bridge.ErrResponseMismatch) {
		t.Fatalf("err %v, want ErrResponseMismatch", err)
	}
	if v.released != 1 {
		t.Fatalf("released %d times, want 1", v.released)
	}
}
