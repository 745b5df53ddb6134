package bridge_test

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafka-iggy/kafka-iggy/bridge"
)

// TestApiVersionsV5Identity: a v5 request naming this gateway (the cluster
// id Metadata reports, its node id) is answered in full; another node or
// cluster is REBOOTSTRAP_REQUIRED; only one of the two set is
// INVALID_REQUEST; neither (bootstrapping) is the plain answer.
func TestApiVersionsV5Identity(t *testing.T) {
	s := startStack(t)
	ctx := adminCtx(t)
	md, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, s.kgoClient(t))
	if err != nil || md.ClusterID == nil {
		t.Fatalf("metadata: %v %+v", err, md)
	}
	cluster := *md.ClusterID
	other := "another-cluster"
	for _, c := range []struct {
		name    string
		cluster *string
		node    int32
		code    int16
	}{
		{"bootstrapping", nil, -1, 0},
		{"this gateway", &cluster, 0, 0},
		{"another node", &cluster, 7, kerr.RebootstrapRequired.Code},
		{"another cluster", &other, 0, kerr.RebootstrapRequired.Code},
		{"cluster only", &cluster, -1, kerr.InvalidRequest.Code},
		{"node only", nil, 0, kerr.InvalidRequest.Code},
	} {
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version = 5
		req.ClientSoftwareName, req.ClientSoftwareVersion = "test", "1"
		req.ClusterID, req.NodeID = c.cluster, c.node
		resp, err := s.Bridge.Table().Dispatch(ctx, &bridge.Request{Key: 18, Version: 5, Msg: req})
		if err != nil {
			t.Fatal(err)
		}
		r := resp.(*kmsg.ApiVersionsResponse)
		if r.ErrorCode != c.code || (c.code == 0) != (len(r.ApiKeys) > 0) {
			t.Fatalf("%s: error %d with %d keys, want %d", c.name, r.ErrorCode, len(r.ApiKeys), c.code)
		}
	}
}

// TestRequestErrorCodesRecorded: the bridge records on the request how many
// error codes its answer carries and the first, which the front door logs
// as the request's outcome (a CreateTopics whose topics all failed is not
// "ok").
func TestRequestErrorCodesRecorded(t *testing.T) {
	s := startStack(t)
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version = 7
	for _, name := range []string{"bad name!", ".."} {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, 1, 1
		req.Topics = append(req.Topics, rt)
	}
	rq := &bridge.Request{Key: 19, Version: 7, Msg: req}
	if _, err := s.Bridge.Table().Dispatch(context.Background(), rq); err != nil {
		t.Fatal(err)
	}
	if rq.ErrorCodes != 2 || rq.FirstErrorCode != kerr.InvalidTopicException.Code {
		t.Fatalf("error codes %d, first %d", rq.ErrorCodes, rq.FirstErrorCode)
	}
	ok := &bridge.Request{Key: 18, Version: 4, Msg: &kmsg.ApiVersionsRequest{Version: 4, ClientSoftwareName: "t", ClientSoftwareVersion: "1"}}
	if _, err := s.Bridge.Table().Dispatch(context.Background(), ok); err != nil || ok.ErrorCodes != 0 {
		t.Fatalf("api versions: %v, %d error codes", err, ok.ErrorCodes)
	}
}
