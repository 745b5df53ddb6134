package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// TestClientMetricsDifferential: KIP-714's client metrics subscriptions
// (what kafka-client-metrics.sh lists, describes and alters):
// ListConfigResources (74) v0 and v1, DescribeConfigs, IncrementalAlterConfigs
// and AlterConfigs on CLIENT_METRICS resources, raw, against Kafka and the
// sidecar.
func TestClientMetricsDifferential(t *testing.T) {
	kafkaDiff(t, clientMetricsScenario, clientMetricsWant, nil)
}

// clientMetricsWant is what Kafka 4.4 answers in clientMetricsScenario.
var clientMetricsWant = map[string]map[string]string{
	"list subscriptions before any":              {"error": "0 NONE", "ours": ""},
	"list an unknown resource type":              {"error": "35 UNSUPPORTED_VERSION", "ours": ""},
	"describe an unknown subscription":           {"error": "0 NONE", "message": "\"\"", "configs": "3", "interval.ms": "\"300000\" DEFAULT_CONFIG INT ro=false sensitive=false syn=[] doc=\"Metrics push interval in milliseconds\"", "match": "\"\" DEFAULT_CONFIG LIST ro=false sensitive=false syn=[] doc=\"Client match criteria\"", "metrics": "\"\" DEFAULT_CONFIG LIST ro=false sensitive=false syn=[] doc=\"Telemetry metric name prefix list\""},
	"describe the empty name":                    {"error": "42 INVALID_REQUEST", "message": "\"Client metrics subscription name must not be empty\"", "configs": "0"},
	"validate a new subscription":                {"error": "0 NONE", "message": "null"},
	"list after validate only":                   {"error": "0 NONE", "ours": ""},
	"create a subscription":                      {"error": "0 NONE", "message": "null"},
	"list after create (v1)":                     {"error": "0 NONE", "ours": "SUB/16"},
	"list after create (v0)":                     {"error": "0 NONE", "ours": "SUB/16"},
	"list topics and subscriptions":              {"error": "0 NONE", "ours": "SUB/16 T/2"},
	"list every type":                            {"error": "0 NONE", "ours": "SUB/16 T/2", "types": "16,2,4,8"},
	"describe the subscription":                  {"error": "0 NONE", "message": "\"\"", "configs": "3", "interval.ms": "\"1000\" CLIENT_METRICS_CONFIG INT ro=false sensitive=false syn=[interval.ms/CLIENT_METRICS_CONFIG/value=true] doc=\"Metrics push interval in milliseconds\"", "match": "\"\" DEFAULT_CONFIG LIST ro=false sensitive=false syn=[] doc=\"Client match criteria\"", "metrics": "\"a.b.,c.d.\" CLIENT_METRICS_CONFIG LIST ro=false sensitive=false syn=[metrics/CLIENT_METRICS_CONFIG/value=true] doc=\"Telemetry metric name prefix list\""},
	"describe without synonyms or docs":          {"error": "0 NONE", "message": "\"\"", "configs": "3", "interval.ms": "\"1000\" CLIENT_METRICS_CONFIG INT ro=false sensitive=false syn=[] doc=null", "match": "\"\" DEFAULT_CONFIG LIST ro=false sensitive=false syn=[] doc=null", "metrics": "\"a.b.,c.d.\" CLIENT_METRICS_CONFIG LIST ro=false sensitive=false syn=[] doc=null"},
	"describe one config":                        {"error": "0 NONE", "message": "\"\"", "configs": "1", "interval.ms": "\"1000\" CLIENT_METRICS_CONFIG INT ro=false sensitive=false syn=[] doc=null"},
	"set match":                                  {"error": "0 NONE", "message": "null"},
	"describe after match":                       {"error": "0 NONE", "message": "\"\"", "configs": "3", "interval.ms": "\"1000\" CLIENT_METRICS_CONFIG INT ro=false sensitive=false syn=[] doc=null", "match": "\"client_id = app.*,client_software_name=apache-kafka-java\" CLIENT_METRICS_CONFIG LIST ro=false sensitive=false syn=[] doc=null", "metrics": "\"a.b.,c.d.\" CLIENT_METRICS_CONFIG LIST ro=false sensitive=false syn=[] doc=null"},
	"append to metrics":                          {"error": "40 INVALID_CONFIG", "message": "\"Can't APPEND to key metrics because its type is not LIST.\""},
	"subtract from metrics":                      {"error": "40 INVALID_CONFIG", "message": "\"Can't SUBTRACT to key metrics because its type is not LIST.\""},
	"an unknown config":                          {"error": "42 INVALID_REQUEST", "message": "\"Unknown client metrics configuration: bogus\""},
	"an unknown config after a bad interval":     {"error": "42 INVALID_REQUEST", "message": "\"Unknown client metrics configuration: bogus\""},
	"an interval too small":                      {"error": "42 INVALID_REQUEST", "message": "\"Invalid value 50 for interval.ms, interval must be between 100 and 3600000 (1 hour)\""},
	"an interval too large":                      {"error": "42 INVALID_REQUEST", "message": "\"Invalid value 3600001 for interval.ms, interval must be between 100 and 3600000 (1 hour)\""},
	"an interval that is not a number":           {"error": "40 INVALID_CONFIG", "message": "\"Invalid value abc for configuration interval.ms: Not a number of type INT\""},
	"a match of an unknown selector":             {"error": "40 INVALID_CONFIG", "message": "\"Illegal client matching pattern: foo=bar\""},
	"a match with a bad regex":                   {"error": "40 INVALID_CONFIG", "message": "\"Illegal client matching pattern: client_id=(\""},
	"a match without a value":                    {"error": "40 INVALID_CONFIG", "message": "\"Illegal client matching pattern: client_id=\""},
	"a match without =":                          {"error": "40 INVALID_CONFIG", "message": "\"Illegal client matching pattern: client_id\""},
	"metrics with an empty element":              {"error": "40 INVALID_CONFIG", "message": "\"Configuration 'metrics' values must not be empty.\""},
	"a null value":                               {"error": "42 INVALID_REQUEST", "message": "\"Null value not supported for : metrics\""},
	"a config named twice":                       {"error": "42 INVALID_REQUEST", "message": "\"Error due to duplicate config keys\""},
	"the empty name":                             {"error": "42 INVALID_REQUEST", "message": "\"Subscription name can't be empty\""},
	"describe after the refused changes":         {"error": "0 NONE", "message": "\"\"", "configs": "3", "interval.ms": "\"1000\" CLIENT_METRICS_CONFIG INT ro=false sensitive=false syn=[] doc=null", "match": "\"client_id = app.*,client_software_name=apache-kafka-java\" CLIENT_METRICS_CONFIG LIST ro=false sensitive=false syn=[] doc=null", "metrics": "\"a.b.,c.d.\" CLIENT_METRICS_CONFIG LIST ro=false sensitive=false syn=[] doc=null"},
	"delete the interval":                        {"error": "0 NONE", "message": "null"},
	"describe after deleting the interval":       {"error": "0 NONE", "message": "\"\"", "configs": "3", "interval.ms": "\"300000\" DEFAULT_CONFIG INT ro=false sensitive=false syn=[] doc=null", "match": "\"client_id = app.*,client_software_name=apache-kafka-java\" CLIENT_METRICS_CONFIG LIST ro=false sensitive=false syn=[] doc=null", "metrics": "\"a.b.,c.d.\" CLIENT_METRICS_CONFIG LIST ro=false sensitive=false syn=[] doc=null"},
	"delete a config of an unknown subscription": {"error": "0 NONE", "message": "null"},
	"list after deleting from an unknown one":    {"error": "0 NONE", "ours": "SUB/16"},
	"create a second subscription":               {"error": "0 NONE", "message": "null"},
	"describe the second subscription":           {"error": "0 NONE", "message": "\"\"", "configs": "3", "interval.ms": "\"300000\" DEFAULT_CONFIG INT ro=false sensitive=false syn=[] doc=null", "match": "\"\" DEFAULT_CONFIG LIST ro=false sensitive=false syn=[] doc=null", "metrics": "\"\" CLIENT_METRICS_CONFIG LIST ro=false sensitive=false syn=[metrics/CLIENT_METRICS_CONFIG/value=true] doc=null"},
	"replace the second subscription's configs":  {"error": "0 NONE", "message": "null"},
	"describe after replace":                     {"error": "0 NONE", "message": "\"\"", "configs": "3", "interval.ms": "\"2000\" CLIENT_METRICS_CONFIG INT ro=false sensitive=false syn=[] doc=null", "match": "\"\" DEFAULT_CONFIG LIST ro=false sensitive=false syn=[] doc=null", "metrics": "\"\" DEFAULT_CONFIG LIST ro=false sensitive=false syn=[] doc=null"},
	"replace with an unknown config":             {"error": "42 INVALID_REQUEST", "message": "\"Unknown client metrics configuration: bogus\""},
	"replace with nothing":                       {"error": "0 NONE", "message": "null"},
	"list after replacing with nothing":          {"error": "0 NONE", "ours": "SUB/16"},
	"delete every config":                        {"error": "0 NONE", "message": "null"},
	"list after deleting every config":           {"error": "0 NONE", "ours": ""},
	"describe a deleted subscription":            {"error": "0 NONE", "message": "\"\"", "configs": "3", "interval.ms": "\"300000\" DEFAULT_CONFIG INT ro=false sensitive=false syn=[] doc=null", "match": "\"\" DEFAULT_CONFIG LIST ro=false sensitive=false syn=[] doc=null", "metrics": "\"\" DEFAULT_CONFIG LIST ro=false sensitive=false syn=[] doc=null"},
}

func clientMetricsScenario(t *testing.T, tg Target) *transcript {
	t.Helper()
	tr := &transcript{}
	cl := newKgo(t, tg)
	v0 := newKgo(t, tg, kgo.MaxVersions(func() *kversion.Versions { v := kversion.Stable(); v.SetMaxKeyVersion(74, 0); return v }()))
	ctx := testCtx(t, 60*time.Second)
	sfx := uniqueTopic("cm")
	sub, other := "S-"+sfx, "O-"+sfx
	topic := uniqueTopic("cmtopic")
	createTopic(t, tg, topic, 1)
	names := strings.NewReplacer(sub, "SUB", other, "OTHER", topic, "T")

	list := func(name string, c *kgo.Client, types ...int8) {
		req := kmsg.NewPtrListConfigResourcesRequest()
		req.ResourceTypes = types
		resp, err := req.RequestWith(ctx, c)
		if err != nil {
			tr.add(name, "error", "client error: "+err.Error())
			return
		}
		var mine []string
		kinds := map[int8]bool{}
		for _, r := range resp.ConfigResources {
			kinds[r.Type] = true
			if r.Name == sub || r.Name == other || r.Name == topic {
				mine = append(mine, fmt.Sprintf("%s/%d", names.Replace(r.Name), r.Type))
			}
		}
		slices.Sort(mine)
		var ks []string
		for k := range kinds {
			ks = append(ks, fmt.Sprint(k))
		}
		slices.Sort(ks)
		kv := []string{"error", errStr(resp.ErrorCode), "ours", strings.Join(mine, " ")}
		if len(types) == 0 && c == cl { // another test's resources may be listed too: only their types count
			kv = append(kv, "types", strings.Join(ks, ","))
		}
		tr.add(name, kv...)
	}
	describe := func(name, res string, synonyms, docs bool, configs ...string) {
		req := kmsg.NewPtrDescribeConfigsRequest()
		rr := kmsg.NewDescribeConfigsRequestResource()
		rr.ResourceType, rr.ResourceName, rr.ConfigNames = kmsg.ConfigResourceTypeClientMetrics, res, configs
		req.Resources = append(req.Resources, rr)
		req.IncludeSynonyms, req.IncludeDocumentation = synonyms, docs
		resp, err := req.RequestWith(ctx, cl)
		if err != nil || len(resp.Resources) != 1 {
			tr.add(name, "error", fmt.Sprintf("client error: %v", err))
			return
		}
		r := resp.Resources[0]
		kv := []string{"error", errStr(r.ErrorCode), "message", strPtr(r.ErrorMessage), "configs", fmt.Sprint(len(r.Configs))}
		for _, c := range r.Configs {
			var syn []string
			for _, s := range c.ConfigSynonyms {
				syn = append(syn, fmt.Sprintf("%s/%s/value=%v", s.Name, s.Source, s.Value != nil && c.Value != nil && *s.Value == *c.Value))
			}
			kv = append(kv, c.Name, fmt.Sprintf("%s %s %s ro=%v sensitive=%v syn=[%s] doc=%s", strPtr(c.Value), c.Source, c.ConfigType,
				c.ReadOnly, c.IsSensitive, strings.Join(syn, " "), strPtr(c.Documentation)))
		}
		tr.add(name, kv...)
	}
	// settle waits, on Kafka, until the broker applied an alteration:
	// Kafka answers once its controller committed the record and applies
	// it to what ListConfigResources and DescribeConfigs read a moment
	// later. A topic created after it and seen in the broker's metadata is
	// the barrier (the broker applies metadata records in order). The
	// sidecar's answers need no wait.
	settle := func(code int16, validate bool) {
		if tg.Kafka && code == 0 && !validate {
			createTopic(t, tg, uniqueTopic("cmbarrier"), 1)
		}
	}
	alter := func(name, res string, validate bool, ops ...string) {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		req.ValidateOnly = validate
		rr := kmsg.NewIncrementalAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeClientMetrics, res
		for i := 0; i+2 < len(ops); i += 3 {
			c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
			c.Name = ops[i]
			c.Op, _ = kmsg.ParseIncrementalAlterConfigOp(ops[i+1])
			if v := ops[i+2]; v != "<null>" {
				c.Value = &v
			}
			rr.Configs = append(rr.Configs, c)
		}
		req.Resources = append(req.Resources, rr)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil || len(resp.Resources) != 1 {
			tr.add(name, "error", fmt.Sprintf("client error: %v", err))
			return
		}
		tr.add(name, "error", errStr(resp.Resources[0].ErrorCode), "message", strPtr(resp.Resources[0].ErrorMessage))
		settle(resp.Resources[0].ErrorCode, validate)
	}
	replace := func(name, res string, kv ...string) {
		req := kmsg.NewPtrAlterConfigsRequest()
		rr := kmsg.NewAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeClientMetrics, res
		for i := 0; i+1 < len(kv); i += 2 {
			c := kmsg.NewAlterConfigsRequestResourceConfig()
			c.Name, c.Value = kv[i], kmsg.StringPtr(kv[i+1])
			rr.Configs = append(rr.Configs, c)
		}
		req.Resources = append(req.Resources, rr)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil || len(resp.Resources) != 1 {
			tr.add(name, "error", fmt.Sprintf("client error: %v", err))
			return
		}
		tr.add(name, "error", errStr(resp.Resources[0].ErrorCode), "message", strPtr(resp.Resources[0].ErrorMessage))
		settle(resp.Resources[0].ErrorCode, false)
	}

	list("list subscriptions before any", cl, 16)
	list("list an unknown resource type", cl, 16, 99)
	describe("describe an unknown subscription", sub, true, true)
	describe("describe the empty name", "", false, false)
	alter("validate a new subscription", sub, true, "metrics", "SET", "org.apache.kafka.producer.", "interval.ms", "SET", "1000")
	list("list after validate only", cl, 16)
	alter("create a subscription", sub, false, "metrics", "SET", " a.b. , c.d.", "interval.ms", "SET", "1000")
	list("list after create (v1)", cl, 16)
	list("list after create (v0)", v0)
	list("list topics and subscriptions", cl, 16, 2)
	list("list every type", cl)
	describe("describe the subscription", sub, true, true)
	describe("describe without synonyms or docs", sub, false, false)
	describe("describe one config", sub, false, false, "interval.ms", "bogus")
	alter("set match", sub, false, "match", "SET", "client_id = app.* ,client_software_name=apache-kafka-java")
	describe("describe after match", sub, false, false)
	alter("append to metrics", sub, false, "metrics", "APPEND", "x")
	alter("subtract from metrics", sub, false, "metrics", "SUBTRACT", "x")
	alter("an unknown config", sub, false, "bogus", "SET", "1")
	alter("an unknown config after a bad interval", sub, false, "interval.ms", "SET", "5", "bogus", "SET", "1")
	alter("an interval too small", sub, false, "interval.ms", "SET", "50")
	alter("an interval too large", sub, false, "interval.ms", "SET", "3600001")
	alter("an interval that is not a number", sub, false, "interval.ms", "SET", "abc")
	alter("a match of an unknown selector", sub, false, "match", "SET", "foo=bar")
	alter("a match with a bad regex", sub, false, "match", "SET", "client_id=(")
	alter("a match without a value", sub, false, "match", "SET", "client_id=")
	alter("a match without =", sub, false, "match", "SET", "client_id")
	alter("metrics with an empty element", sub, false, "metrics", "SET", "a,,b")
	alter("a null value", sub, false, "metrics", "SET", "<null>")
	alter("a config named twice", sub, false, "metrics", "SET", "a", "metrics", "SET", "b")
	alter("the empty name", "", false, "metrics", "SET", "a")
	describe("describe after the refused changes", sub, false, false)
	alter("delete the interval", sub, false, "interval.ms", "DELETE", "<null>")
	describe("describe after deleting the interval", sub, false, false)
	alter("delete a config of an unknown subscription", other, false, "metrics", "DELETE", "<null>")
	list("list after deleting from an unknown one", cl, 16)
	alter("create a second subscription", other, false, "metrics", "SET", "")
	describe("describe the second subscription", other, true, false)
	replace("replace the second subscription's configs", other, "interval.ms", "2000")
	describe("describe after replace", other, false, false)
	replace("replace with an unknown config", other, "bogus", "1")
	replace("replace with nothing", other)
	list("list after replacing with nothing", cl, 16)
	alter("delete every config", sub, false, "metrics", "DELETE", "<null>", "match", "DELETE", "<null>")
	list("list after deleting every config", cl, 16)
	describe("describe a deleted subscription", sub, false, false)
	return tr
}

func strPtr(s *string) string {
	if s == nil {
		return "null"
	}
	return fmt.Sprintf("%q", *s)
}
