package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.yaml.in/yaml/v3"
)

// manifestTemplate is the injector's template taken from the sidecar of
// deploy/kubernetes/deployment.yaml (which deploy/deploy_test.go holds
// equal to the Helm chart's, the source of the injector's template in a
// cluster).
func manifestTemplate(t *testing.T) []byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot, "deploy", "kubernetes", "deployment.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var dep map[string]any
	if err := yaml.Unmarshal(raw, &dep); err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(map[string]any{
		"initContainer":  dig(dep, "spec", "template", "spec", "initContainers", 0),
		"volumes":        dig(dep, "spec", "template", "spec", "volumes"),
		"podAnnotations": dig(dep, "spec", "template", "metadata", "annotations"),
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// selfSigned writes a self-signed certificate for 127.0.0.1 and its key
// into dir and returns the paths and a pool that trusts it.
func selfSigned(t *testing.T, dir string) (certPath, keyPath string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kafka-iggy-injector"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, IsCA: true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPath, keyPath = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	if err := os.WriteFile(certPath, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	pool = x509.NewCertPool()
	pool.AppendCertsFromPEM(certPEM)
	return certPath, keyPath, pool
}

// webhook is a running `kafka-iggy inject` (serveInject) and a client
// that trusts its certificate.
type webhook struct {
	url    string
	client *http.Client
}

func startInjector(t *testing.T) *webhook {
	t.Helper()
	dir := t.TempDir()
	certPath, keyPath, pool := selfSigned(t, dir)
	tmplPath := filepath.Join(dir, "sidecar.json")
	if err := os.WriteFile(tmplPath, manifestTemplate(t), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	addrs := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() {
		done <- serveInject(ctx, injectOptions{Listen: "127.0.0.1:0", Template: tmplPath, Cert: certPath, Key: keyPath,
			Exclude: injectDefaultExclude}, zerolog.New(io.Discard), func(a net.Addr) { addrs <- a })
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("injector: %v", err)
		}
	})
	select {
	case a := <-addrs:
		return &webhook{url: "https://" + a.String() + "/mutate", client: &http.Client{
			Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}}
	case err := <-done:
		t.Fatalf("injector did not start: %v", err)
	}
	return nil
}

// post sends body and returns the HTTP status and the decoded review.
func (w *webhook) post(t *testing.T, body []byte) (int, admissionReview) {
	t.Helper()
	resp, err := w.client.Post(w.url, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out admissionReview
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("the answer is not an AdmissionReview: %v", err)
	}
	if out.APIVersion != "admission.k8s.io/v1" || out.Kind != "AdmissionReview" || out.Response == nil {
		t.Fatalf("answer %+v", out)
	}
	return resp.StatusCode, out
}

// review is an AdmissionReview for a Pod CREATE of pod in ns.
func review(t *testing.T, uid, ns string, pod map[string]any) []byte {
	t.Helper()
	obj, err := json.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(map[string]any{
		"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
		"request": map[string]any{
			"uid": uid, "kind": map[string]string{"group": "", "version": "v1", "kind": "Pod"},
			"resource":  map[string]string{"group": "", "version": "v1", "resource": "pods"},
			"namespace": ns, "operation": "CREATE", "object": json.RawMessage(obj),
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// appPod is a Pod as a Deployment's ReplicaSet creates it.
func appPod(annotations map[string]string, withInit bool) map[string]any {
	spec := map[string]any{
		"containers": []any{map[string]any{
			"name": "app", "image": "registry.example.com/orders-app:1.0.0",
			"env": []any{map[string]any{"name": "KAFKA_BOOTSTRAP_SERVERS", "value": "localhost:9092"}},
		}},
	}
	if withInit {
		spec["initContainers"] = []any{map[string]any{"name": "migrate", "image": "registry.example.com/migrate:1.0.0"}}
		spec["volumes"] = []any{map[string]any{"name": "data", "emptyDir": map[string]any{}}}
	}
	meta := map[string]any{"generateName": "orders-app-5d9c7-", "labels": map[string]any{"app.kubernetes.io/name": "orders-app"}}
	if annotations != nil {
		meta["annotations"] = annotations
	}
	return map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}
}

// applyPatch applies the "add" operations of an RFC 6902 patch (all the
// injector emits) to doc, failing on anything else or a bad path.
func applyPatch(t *testing.T, doc map[string]any, patch []byte) map[string]any {
	t.Helper()
	var ops []struct {
		Op    string `json:"op"`
		Path  string `json:"path"`
		Value any    `json:"value"`
	}
	if err := json.Unmarshal(patch, &ops); err != nil {
		t.Fatalf("patch: %v", err)
	}
	// Work on a JSON copy so the caller's doc is untouched.
	raw, _ := json.Marshal(doc)
	var root any
	_ = json.Unmarshal(raw, &root)
	for _, op := range ops {
		if op.Op != "add" {
			t.Fatalf("op %q: the injector only adds", op.Op)
		}
		parts := strings.Split(op.Path, "/")[1:]
		for i := range parts {
			parts[i] = strings.ReplaceAll(strings.ReplaceAll(parts[i], "~1", "/"), "~0", "~")
		}
		parent := root
		for _, p := range parts[:len(parts)-1] {
			switch c := parent.(type) {
			case map[string]any:
				parent = c[p]
			case []any:
				i, _ := strconv.Atoi(p)
				parent = c[i]
			}
			if parent == nil {
				t.Fatalf("%s: no %s", op.Path, p)
			}
		}
		last := parts[len(parts)-1]
		switch c := parent.(type) {
		case map[string]any:
			if _, exists := c[last]; exists {
				t.Fatalf("%s: add over an existing member", op.Path)
			}
			c[last] = op.Value
		case []any:
			// Lists are replaced in their parent: find it again.
			grand := root
			for _, p := range parts[:len(parts)-2] {
				grand = grand.(map[string]any)[p]
			}
			key := parts[len(parts)-2]
			if last == "-" {
				grand.(map[string]any)[key] = append(c, op.Value)
			} else {
				i, err := strconv.Atoi(last)
				if err != nil || i > len(c) {
					t.Fatalf("%s: bad index", op.Path)
				}
				grand.(map[string]any)[key] = append(c[:i:i], append([]any{op.Value}, c[i:]...)...)
			}
		default:
			t.Fatalf("%s: parent is %T", op.Path, parent)
		}
	}
	return root.(map[string]any)
}

// kubeconformPod validates pod strictly against the Kubernetes 1.33
// schemas (kubeconform and the schemas from scripts/install-test-deps.sh;
// a failure under CI=true when they are missing).
func kubeconformPod(t *testing.T, pod map[string]any) {
	t.Helper()
	bin := os.Getenv("KAFKA_IGGY_TOOLS_DIR")
	schemas := os.Getenv("KAFKA_IGGY_K8S_SCHEMAS")
	home, _ := os.UserHomeDir()
	if bin == "" {
		bin = filepath.Join(home, ".cache", "kafka-iggy", "bin")
	}
	if schemas == "" {
		schemas = filepath.Join(home, ".cache", "kafka-iggy", "k8s-schemas")
	}
	_, errBin := os.Stat(filepath.Join(bin, "kubeconform"))
	_, errSch := os.Stat(filepath.Join(schemas, "stamp"))
	if errBin != nil || errSch != nil {
		msg := "kubeconform or the Kubernetes JSON schemas are not installed; run scripts/install-test-deps.sh"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	raw, _ := json.Marshal(pod)
	cmd := exec.Command(filepath.Join(bin, "kubeconform"), "-strict", "-summary", "-output", "json", "-kubernetes-version", "1.33.0",
		"-schema-location", schemas+"/{{ .NormalizedKubernetesVersion }}-local{{ .StrictSuffix }}/{{ .ResourceKind }}{{ .KindSuffix }}.json", "-")
	cmd.Stdin = bytes.NewReader(raw)
	out, _ := cmd.Output()
	var report struct {
		Summary struct{ Valid, Invalid, Errors, Skipped int } `json:"summary"`
	}
	if err := json.Unmarshal(out, &report); err != nil {
		t.Fatalf("kubeconform: %v\n%s", err, out)
	}
	if s := report.Summary; s.Valid != 1 || s.Invalid+s.Errors+s.Skipped != 0 {
		t.Fatalf("the patched pod does not validate: %s\n%s", out, raw)
	}
}

// envOf returns the sidecar's env as name -> value or source.
func envOf(side any) map[string]string {
	env := map[string]string{}
	for _, e := range dig(side, "env").([]any) {
		name := dig(e, "name").(string)
		if v, ok := dig(e, "value").(string); ok {
			env[name] = v
		} else {
			env[name] = fmt.Sprint(dig(e, "valueFrom"))
		}
	}
	return env
}

// The injector answers real AdmissionReviews over TLS: an annotated pod
// gets the manifests' native sidecar (probes, POD_IP, the Secret and the
// ConfigMap) with its overrides, and validates; a plain pod, an injected
// pod and a pod of an excluded namespace are left alone; a bad override
// refuses the pod with the reason.
func TestInjectorPatchesAnnotatedPods(t *testing.T) {
	w := startInjector(t)

	// A plain pod: allowed, no patch.
	code, rv := w.post(t, review(t, "plain", "shop", appPod(nil, false)))
	if code != 200 || !rv.Response.Allowed || rv.Response.Patch != nil || rv.Response.UID != "plain" {
		t.Fatalf("plain pod: %d %+v", code, rv.Response)
	}

	// A minimal annotated pod: the lists and the annotations are added whole.
	pod := appPod(map[string]string{annInject: "true"}, false)
	code, rv = w.post(t, review(t, "minimal", "shop", pod))
	if code != 200 || !rv.Response.Allowed || rv.Response.PatchType != "JSONPatch" {
		t.Fatalf("annotated pod: %d %+v", code, rv.Response)
	}
	var ops []patchOp
	if err := json.Unmarshal(rv.Response.Patch, &ops); err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, op := range ops {
		paths = append(paths, op.Op+" "+op.Path)
	}
	if got := strings.Join(paths, ", "); got != "add /spec/initContainers, add /spec/volumes, add /metadata/annotations/kafka-iggy.io~1status, add /metadata/annotations/prometheus.io~1path, add /metadata/annotations/prometheus.io~1port, add /metadata/annotations/prometheus.io~1scrape" {
		t.Fatalf("patch ops: %s", got)
	}
	injected := applyPatch(t, pod, rv.Response.Patch)
	kubeconformPod(t, injected)
	side := dig(injected, "spec", "initContainers", 0)
	if dig(side, "name") != "kafka-iggy" || dig(side, "restartPolicy") != "Always" ||
		dig(side, "livenessProbe", "httpGet", "path") != "/healthz" || dig(side, "startupProbe", "httpGet", "path") != "/readyz" {
		t.Fatalf("not the native sidecar with its probes: %v", side)
	}
	env := envOf(side)
	if !strings.Contains(env["POD_IP"], "status.podIP") || env["KAFKA_IGGY_PEERS__ADVERTISED_HOST"] != "$(POD_IP)" ||
		!strings.Contains(env["KAFKA_IGGY_IGGY__PASSWORD"], "kafka-iggy-iggy-login") {
		t.Fatalf("sidecar env: %v", env)
	}
	if _, ok := env["GOMEMLIMIT"]; ok {
		t.Error("GOMEMLIMIT set: the sidecar derives it from its memory budget")
	}
	if dig(injected, "spec", "volumes", 0, "configMap", "name") != "kafka-iggy-config" {
		t.Errorf("config volume: %v", dig(injected, "spec", "volumes"))
	}
	// The injected sidecar's configuration loads from the manifests'
	// ConfigMap and Secret and is what a cluster needs.
	var stream []byte
	for _, f := range []string{"configmap.yaml", "secret.yaml"} {
		raw, err := os.ReadFile(filepath.Join(repoRoot, "deploy", "kubernetes", f))
		if err != nil {
			t.Fatal(err)
		}
		stream = append(append(stream, raw...), "\n---\n"...)
	}
	dep, _ := json.Marshal(map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "wrapped"},
		"spec": map[string]any{"template": map[string]any{"spec": injected["spec"]}}})
	cfg, sideCfg := podConfig(t, append(stream, dep...))
	checkPodConfig(t, cfg, sideCfg, "kafka-iggy", "change-me-please")

	// The same pod once injected is left alone.
	code, rv = w.post(t, review(t, "again", "shop", injected))
	if code != 200 || !rv.Response.Allowed || rv.Response.Patch != nil {
		t.Fatalf("injected pod patched again: %d %+v", code, rv.Response)
	}

	// A pod with init containers, volumes and every override.
	pod = appPod(map[string]string{
		annInject: "true", annIggyAddress: "iggy.other.svc:8090", annDomain: "orders-eu",
		annSecret: "orders-login", annConfigMap: "orders-kafka-iggy", annCPURequest: "250m", annMemLimit: "512Mi",
		"prometheus.io/scrape": "false",
	}, true)
	code, rv = w.post(t, review(t, "overrides", "shop", pod))
	if code != 200 || !rv.Response.Allowed {
		t.Fatalf("pod with overrides: %d %+v", code, rv.Response)
	}
	injected = applyPatch(t, pod, rv.Response.Patch)
	kubeconformPod(t, injected)
	side = dig(injected, "spec", "initContainers", 0)
	if dig(side, "name") != "kafka-iggy" || dig(injected, "spec", "initContainers", 1, "name") != "migrate" {
		t.Fatalf("the sidecar is not first among the init containers: %v", dig(injected, "spec", "initContainers"))
	}
	env = envOf(side)
	if env["KAFKA_IGGY_IGGY__ADDRESS"] != "iggy.other.svc:8090" || env["KAFKA_IGGY_COORDINATION__DOMAIN"] != "orders-eu" ||
		!strings.Contains(env["KAFKA_IGGY_IGGY__USERNAME"], "orders-login") || strings.Contains(fmt.Sprint(env), "kafka-iggy-iggy-login") {
		t.Errorf("overrides not applied to env: %v", env)
	}
	if dig(side, "resources", "requests", "cpu") != "250m" || dig(side, "resources", "limits", "memory") != "512Mi" ||
		dig(side, "resources", "requests", "memory") != "64Mi" {
		t.Errorf("resources: %v", dig(side, "resources"))
	}
	if dig(injected, "spec", "volumes", 1, "configMap", "name") != "orders-kafka-iggy" || dig(injected, "spec", "volumes", 0, "name") != "data" {
		t.Errorf("volumes: %v", dig(injected, "spec", "volumes"))
	}
	if dig(injected, "metadata", "annotations", "prometheus.io/scrape") != "false" || dig(injected, "metadata", "annotations", "prometheus.io/port") != nil {
		t.Errorf("the pod's own scrape annotation was overridden: %v", dig(injected, "metadata", "annotations"))
	}

	// An excluded namespace is never touched.
	code, rv = w.post(t, review(t, "system", "kube-system", appPod(map[string]string{annInject: "true"}, false)))
	if code != 200 || !rv.Response.Allowed || rv.Response.Patch != nil {
		t.Fatalf("pod in kube-system: %d %+v", code, rv.Response)
	}

	// A bad override refuses the pod, saying why.
	code, rv = w.post(t, review(t, "bad-memory", "shop", appPod(map[string]string{annInject: "true", annMemLimit: "lots"}, false)))
	if code != 200 || rv.Response.Allowed || rv.Response.Result == nil || rv.Response.Result.Code != 422 ||
		!strings.Contains(rv.Response.Result.Message, annMemLimit) || rv.Response.UID != "bad-memory" {
		t.Fatalf("bad override: %d %+v %+v", code, rv.Response, rv.Response.Result)
	}
}

// Malformed requests get an AdmissionReview error (400), never a crash:
// the webhook answers the next good request.
func TestInjectorRefusesMalformedReviews(t *testing.T) {
	w := startInjector(t)
	good := review(t, "u1", "shop", appPod(map[string]string{annInject: "true"}, false))
	for name, body := range map[string]string{
		"not JSON":         "{this is not json",
		"empty":            "",
		"wrong kind":       `{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview","request":{"uid":"x"}}`,
		"no request":       `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`,
		"no uid":           strings.Replace(string(good), `"uid":"u1"`, `"uid":""`, 1),
		"not a pod":        strings.Replace(string(good), `"kind":"Pod"`, `"kind":"Service"`, 1),
		"object not a map": strings.Replace(string(good), `"object":{`, `"object":[{`, 1),
		"pod spec garbage": strings.Replace(string(good), `"containers":[`, `"containers":{"x":[`, 1),
	} {
		code, rv := w.post(t, []byte(body))
		if code != http.StatusBadRequest && !(name == "pod spec garbage" && code == 200) {
			t.Errorf("%s: HTTP %d", name, code)
		}
		if rv.Response.Allowed || rv.Response.Result == nil || rv.Response.Result.Message == "" {
			t.Errorf("%s: not refused with a reason: %+v", name, rv.Response)
		}
	}
	if code, rv := w.post(t, good); code != 200 || !rv.Response.Allowed || rv.Response.Patch == nil {
		t.Fatalf("a good review after the malformed ones: %d %+v", code, rv.Response)
	}
}

// In a cluster the injector's template is the Helm chart's ConfigMap,
// rendered from the same template as the chart's Deployment: fed that
// template, the injector patches a pod into one that validates and whose
// sidecar loads the chart's configuration. Needs helm from
// scripts/install-test-deps.sh (a failure under CI=true when missing).
func TestInjectorWithChartTemplate(t *testing.T) {
	home, _ := os.UserHomeDir()
	dir := os.Getenv("KAFKA_IGGY_TOOLS_DIR")
	if dir == "" {
		dir = filepath.Join(home, ".cache", "kafka-iggy", "bin")
	}
	helm := filepath.Join(dir, "helm")
	if _, err := os.Stat(helm); err != nil {
		msg := "helm is not installed; run scripts/install-test-deps.sh"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	rendered, err := exec.Command(helm, "template", "demo", filepath.Join(repoRoot, "deploy", "helm", "kafka-iggy"),
		"--kube-version", "1.33.0", "--set", "injector.enabled=true,app.enabled=false,iggy.password=app-iggy-pw").Output()
	if err != nil {
		t.Fatalf("helm template: %v", err)
	}
	var template string
	dec := yaml.NewDecoder(bytes.NewReader(rendered))
	for {
		var d map[string]any
		if err := dec.Decode(&d); err != nil {
			break
		}
		if s, ok := dig(d, "data", "sidecar.json").(string); ok {
			template = s
		}
	}
	if template == "" {
		t.Fatal("no sidecar.json in the rendered chart")
	}
	in, err := newInjector([]byte(template), []string{"kube-system"}, zerolog.New(io.Discard))
	if err != nil {
		t.Fatal(err)
	}
	pod := appPod(map[string]string{annInject: "true"}, true)
	raw, _ := json.Marshal(pod)
	d, err := in.tmpl.mutatePod(raw, "shop", in.excluded)
	if err != nil || d.patch == nil {
		t.Fatalf("no patch: %v %q", err, d.skip)
	}
	patch, _ := json.Marshal(d.patch)
	injected := applyPatch(t, pod, patch)
	kubeconformPod(t, injected)
	// Wrapped in a Deployment beside the chart's ConfigMap and Secret, the
	// sidecar's configuration loads.
	dep, _ := json.Marshal(map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "wrapped"},
		"spec": map[string]any{"template": map[string]any{"spec": injected["spec"]}}})
	var stream []byte
	dec = yaml.NewDecoder(bytes.NewReader(rendered))
	for {
		var d map[string]any
		if err := dec.Decode(&d); err != nil {
			break
		}
		if k := d["kind"]; (k == "ConfigMap" || k == "Secret") && dig(d, "data", "sidecar.json") == nil && dig(d, "type") != "kubernetes.io/tls" {
			out, _ := yaml.Marshal(d)
			stream = append(append(stream, out...), "\n---\n"...)
		}
	}
	cfg, side := podConfig(t, append(stream, dep...))
	checkPodConfig(t, cfg, side, "orders-app", "app-iggy-pw") // the app's own Iggy user, never root
}
