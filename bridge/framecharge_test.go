package bridge

import (
	"runtime"
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestFrameChargeCoversDecoding: decoding a request made of the smallest
// entries its arrays can carry (the most kmsg structs per wire byte)
// allocates at most half its API's frame charge, leaving the other half
// (at least) for serving it and its response.
func TestFrameChargeCoversDecoding(t *testing.T) {
	const n = 20000
	str := func(i int) string { return strconv.Itoa(i % 10) }
	var reqs []kmsg.Request

	dc := kmsg.NewPtrDescribeConfigsRequest()
	dc.SetVersion(4)
	for range n {
		dc.Resources = append(dc.Resources, kmsg.NewDescribeConfigsRequestResource())
	}
	reqs = append(reqs, dc)

	f := kmsg.NewPtrFetchRequest()
	f.SetVersion(12)
	ft := kmsg.NewFetchRequestTopic()
	for i := range n {
		p := kmsg.NewFetchRequestTopicPartition()
		p.Partition = int32(i)
		ft.Partitions = append(ft.Partitions, p)
	}
	f.Topics = append(f.Topics, ft)
	reqs = append(reqs, f)

	of := kmsg.NewPtrOffsetFetchRequest()
	of.SetVersion(7)
	ot := kmsg.NewOffsetFetchRequestTopic()
	for i := range n {
		ot.Partitions = append(ot.Partitions, int32(i))
	}
	of.Topics = append(of.Topics, ot)
	reqs = append(reqs, of)

	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.SetVersion(5)
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.SetVersion(4)
	jg := kmsg.NewPtrJoinGroupRequest()
	jg.SetVersion(9)
	ct := kmsg.NewPtrCreateTopicsRequest()
	ct.SetVersion(7)
	md := kmsg.NewPtrMetadataRequest()
	md.SetVersion(12)
	dt := kmsg.NewPtrDeleteTopicsRequest()
	dt.SetVersion(6)
	pr := kmsg.NewPtrProduceRequest()
	pr.SetVersion(9)
	prt := kmsg.NewProduceRequestTopic()
	for i := range n {
		dg.Groups = append(dg.Groups, str(i))
		fc.CoordinatorKeys = append(fc.CoordinatorKeys, str(i))
		p := kmsg.NewJoinGroupRequestProtocol()
		p.Name = str(i)
		jg.Protocols = append(jg.Protocols, p)
		tt := kmsg.NewCreateTopicsRequestTopic()
		tt.Topic = str(i)
		ct.Topics = append(ct.Topics, tt)
		mt := kmsg.NewMetadataRequestTopic()
		name := str(i)
		mt.Topic = &name
		md.Topics = append(md.Topics, mt)
		dtt := kmsg.NewDeleteTopicsRequestTopic()
		dtt.Topic = &name
		dt.Topics = append(dt.Topics, dtt)
		pp := kmsg.NewProduceRequestTopicPartition()
		pp.Partition = int32(i)
		prt.Partitions = append(prt.Partitions, pp)
	}
	pr.Topics = append(pr.Topics, prt)
	reqs = append(reqs, dg, fc, jg, ct, md, dt, pr)

	oc := kmsg.NewPtrOffsetCommitRequest()
	oc.SetVersion(8)
	oct := kmsg.NewOffsetCommitRequestTopic()
	lo := kmsg.NewPtrListOffsetsRequest()
	lo.SetVersion(7)
	lot := kmsg.NewListOffsetsRequestTopic()
	sg := kmsg.NewPtrSyncGroupRequest()
	sg.SetVersion(5)
	lg := kmsg.NewPtrLeaveGroupRequest()
	lg.SetVersion(5)
	dgr := kmsg.NewPtrDeleteGroupsRequest()
	dgr.SetVersion(2)
	ac := kmsg.NewPtrAlterConfigsRequest()
	ac.SetVersion(2)
	iac := kmsg.NewPtrIncrementalAlterConfigsRequest()
	iac.SetVersion(1)
	for i := range n {
		ocp := kmsg.NewOffsetCommitRequestTopicPartition()
		ocp.Partition = int32(i)
		oct.Partitions = append(oct.Partitions, ocp)
		lop := kmsg.NewListOffsetsRequestTopicPartition()
		lop.Partition = int32(i)
		lot.Partitions = append(lot.Partitions, lop)
		sga := kmsg.NewSyncGroupRequestGroupAssignment()
		sga.MemberID = str(i)
		sg.GroupAssignment = append(sg.GroupAssignment, sga)
		lgm := kmsg.NewLeaveGroupRequestMember()
		lgm.MemberID = str(i)
		lg.Members = append(lg.Members, lgm)
		dgr.Groups = append(dgr.Groups, str(i))
		ac.Resources = append(ac.Resources, kmsg.NewAlterConfigsRequestResource())
		iac.Resources = append(iac.Resources, kmsg.NewIncrementalAlterConfigsRequestResource())
	}
	oc.Topics = append(oc.Topics, oct)
	lo.Topics = append(lo.Topics, lot)
	reqs = append(reqs, oc, lo, sg, lg, dgr, ac, iac)

	charges := map[int16]int64{}
	for _, a := range rowsBridge(t).apis() {
		charges[a.Key] = a.FrameCharge
	}
	frameCharge := func(key int16) int64 { return charges[key] }
	for _, req := range reqs {
		body := req.AppendTo(nil)
		into := kmsg.RequestForKey(req.Key())
		into.SetVersion(req.GetVersion())
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		if err := into.ReadFrom(body); err != nil {
			t.Fatalf("%s: %v", kmsg.NameForKey(req.Key()), err)
		}
		runtime.ReadMemStats(&after)
		alloc := after.TotalAlloc - before.TotalAlloc
		charge := uint64(frameCharge(req.Key())) * uint64(len(body))
		t.Logf("%-16s v%-2d frame %7d bytes: decoding allocates %8d (%.1fx), charge %.0fx",
			kmsg.NameForKey(req.Key()), req.GetVersion(), len(body), alloc, float64(alloc)/float64(len(body)), float64(frameCharge(req.Key())))
		if alloc > charge/2 {
			t.Errorf("%s: decoding a %d-byte frame allocates %d bytes, more than half its charge %d",
				kmsg.NameForKey(req.Key()), len(body), alloc, charge)
		}
	}
}
