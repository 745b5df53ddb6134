// Package deploy holds no code: its tests check the deployment files
// (Kubernetes manifests, Helm chart, Dockerfile) with kubeconform and helm
// as installed by scripts/install-test-deps.sh.
package deploy

import (
	"bytes"
	"debug/elf"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// kubeVersions are the Kubernetes versions the manifests must validate
// against: 1.33 (native sidecars GA) and the newest schemas installed.
var kubeVersions = []string{"1.33.0", "1.37.0"}

const chartDir = "helm/kafka-iggy"

// cacheDir is where scripts/install-test-deps.sh puts things.
func cacheDir(t *testing.T, env, sub string) string {
	if d := os.Getenv(env); d != "" {
		return d
	}
	home, err := os.UserHomeDir()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(home, ".cache", "kafka-iggy", sub)
}

// missing fails under CI (where the install script must have run) and
// skips elsewhere.
func missing(t *testing.T, what string) {
	t.Helper()
	msg := what + " is not installed; run scripts/install-test-deps.sh (or make test-deps)"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// tool returns the path of a pinned tool from the install script's cache.
func tool(t *testing.T, name string) string {
	t.Helper()
	p := filepath.Join(cacheDir(t, "KAFKA_IGGY_TOOLS_DIR", "bin"), name)
	if _, err := os.Stat(p); err != nil {
		missing(t, name)
	}
	return p
}

// schemaLocation is kubeconform's template for the offline schemas.
func schemaLocation(t *testing.T) string {
	t.Helper()
	dir := cacheDir(t, "KAFKA_IGGY_K8S_SCHEMAS", "k8s-schemas")
	if _, err := os.Stat(filepath.Join(dir, "stamp")); err != nil {
		missing(t, "the Kubernetes JSON schemas")
	}
	return dir + "/{{ .NormalizedKubernetesVersion }}-local{{ .StrictSuffix }}/{{ .ResourceKind }}{{ .KindSuffix }}.json"
}

type summary struct {
	Valid, Invalid, Errors, Skipped int
}

// kubeconform validates files (or stdin when files is empty) strictly
// against the schemas of version; it returns the summary and the report.
func kubeconform(t *testing.T, version string, stdin []byte, files ...string) (summary, string) {
	t.Helper()
	args := []string{"-strict", "-summary", "-output", "json", "-kubernetes-version", version, "-schema-location", schemaLocation(t)}
	if len(files) == 0 {
		files = []string{"-"}
	}
	cmd := exec.Command(tool(t, "kubeconform"), append(args, files...)...)
	cmd.Stdin = bytes.NewReader(stdin)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	_ = cmd.Run() // non-zero for invalid resources; the summary says which
	var report struct {
		Summary summary `json:"summary"`
	}
	if err := json.Unmarshal(out.Bytes(), &report); err != nil {
		t.Fatalf("kubeconform output does not parse: %v\n%s\n%s", err, out.String(), stderr.String())
	}
	return report.Summary, out.String()
}

func manifestFiles(t *testing.T) []string {
	files, err := filepath.Glob("kubernetes/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests: %v", err)
	}
	return files
}

// The Kubernetes manifests validate against the schemas, strictly (no
// unknown fields), with no resource skipped for want of a schema.
func TestManifestsValidate(t *testing.T) {
	files := manifestFiles(t)
	for _, v := range kubeVersions {
		s, report := kubeconform(t, v, nil, files...)
		if s.Valid != 5 || s.Invalid+s.Errors+s.Skipped != 0 {
			t.Errorf("Kubernetes %s: %+v\n%s", v, s, report)
		}
	}
}

// The validation is real: a manifest with an unknown field or a wrong
// type fails.
func TestKubeconformRejectsBadManifests(t *testing.T) {
	raw, err := os.ReadFile("kubernetes/deployment.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for name, bad := range map[string]string{
		"unknown field": strings.Replace(string(raw), "\n          restartPolicy: Always\n", "\n          restartPolicy: Always\n          sidecar: true\n", 1),
		"wrong type":    strings.Replace(string(raw), "replicas: 2", "replicas: two", 1),
	} {
		if bad == string(raw) {
			t.Fatalf("%s: the mutation did not apply", name)
		}
		s, report := kubeconform(t, kubeVersions[0], []byte(bad))
		if s.Invalid != 1 {
			t.Errorf("%s: not rejected: %+v\n%s", name, s, report)
		}
	}
}

// chartVariants are the value sets the chart is linted and rendered with.
var chartVariants = map[string][]string{
	"defaults": nil,
	"existing secret, extra config and env": {
		"--set", "iggy.existingSecret=my-iggy-login",
		"--set", "config.iggy.pool_size=8",
		"--set-string", "config.topics.overrides.orders\\.v1=shop/orders",
		"--set", "sidecar.extraEnv[0].name=KAFKA_IGGY_LOG__LEVEL,sidecar.extraEnv[0].value=debug",
		"--set", "app.ports[0].name=http,app.ports[0].containerPort=8080",
		"--set", "prometheusAnnotations=false",
	},
}

func TestHelmLint(t *testing.T) {
	helm := tool(t, "helm")
	for name, set := range chartVariants {
		out, err := exec.Command(helm, append([]string{"lint", "--strict", chartDir}, set...)...).CombinedOutput()
		if err != nil {
			t.Errorf("helm lint (%s): %v\n%s", name, err, out)
		}
	}
	// The injector variants lint too (injector_test.go renders them).
	for _, set := range []string{"injector.enabled=true,app.enabled=false", "injector.enabled=true,injector.certManager.enabled=true"} {
		if out, err := exec.Command(helm, "lint", "--strict", chartDir, "--set", set).CombinedOutput(); err != nil {
			t.Errorf("helm lint (%s): %v\n%s", set, err, out)
		}
	}
	// values.schema.json is enforced.
	if out, err := exec.Command(helm, "lint", "--strict", chartDir, "--set", "sidecar.ports.kafka=70000").CombinedOutput(); err == nil {
		t.Errorf("helm lint accepted port 70000:\n%s", out)
	}
}

// helmTemplate renders the chart.
func helmTemplate(t *testing.T, set []string) []byte {
	t.Helper()
	args := append([]string{"template", "demo", chartDir, "--kube-version", kubeVersions[0]}, set...)
	var out, stderr bytes.Buffer
	cmd := exec.Command(tool(t, "helm"), args...)
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("helm template: %v\n%s", err, stderr.String())
	}
	return out.Bytes()
}

// docs splits a multi-document YAML stream into maps.
func docs(t *testing.T, raw []byte) []map[string]any {
	t.Helper()
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	var out []map[string]any
	for {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if err.Error() == "EOF" {
				return out
			}
			t.Fatal(err)
		}
		if m != nil {
			out = append(out, m)
		}
	}
}

// dig walks maps and lists: dig(m, "spec", "template", 0, "name").
func dig(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			l, _ := v.([]any)
			if k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

// The rendered chart validates like the static manifests and keeps the
// sidecar pattern: a native sidecar with probes, POD_IP advertised, the
// login from a Secret.
func TestHelmTemplateValidates(t *testing.T) {
	for name, set := range chartVariants {
		t.Run(name, func(t *testing.T) {
			rendered := helmTemplate(t, set)
			wantResources := 5 // NetworkPolicy, Secret, ConfigMap, Deployment, Job
			if name != "defaults" {
				wantResources = 4 // no Secret with iggy.existingSecret
			}
			for _, v := range kubeVersions {
				s, report := kubeconform(t, v, rendered)
				if s.Valid != wantResources || s.Invalid+s.Errors+s.Skipped != 0 {
					t.Errorf("Kubernetes %s: %+v\n%s", v, s, report)
				}
			}
			var dep map[string]any
			for _, d := range docs(t, rendered) {
				if d["kind"] == "Deployment" {
					dep = d
				}
			}
			side := dig(dep, "spec", "template", "spec", "initContainers", 0)
			if dig(side, "name") != "kafka-iggy" || dig(side, "restartPolicy") != "Always" {
				t.Fatalf("no native sidecar: %v", side)
			}
			for _, probe := range []string{"startupProbe", "readinessProbe", "livenessProbe"} {
				if dig(side, probe, "httpGet", "port") != "admin" {
					t.Errorf("%s: %v", probe, dig(side, probe))
				}
			}
			env := fmt.Sprint(dig(side, "env"))
			for _, want := range []string{"status.podIP", "KAFKA_IGGY_PEERS__ADVERTISED_HOST value:$(POD_IP)", "KAFKA_IGGY_PEERS__SECRET", "secretKeyRef"} {
				if !strings.Contains(env, want) {
					t.Errorf("sidecar env lacks %q: %s", want, env)
				}
			}
			if name != "defaults" && !strings.Contains(env, "name:my-iggy-login") {
				t.Errorf("existingSecret not used: %s", env)
			}
		})
	}
}

// The Dockerfile is multi-stage, builds a static binary and runs it on
// distroless as non-root; its build command, run here, gives a binary
// without a dynamic loader.
func TestDockerfile(t *testing.T) {
	raw, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	df := string(raw)
	froms := regexp.MustCompile(`(?m)^FROM\s+(\S+)`).FindAllStringSubmatch(df, -1)
	if len(froms) < 2 {
		t.Fatalf("not multi-stage: %d FROM lines", len(froms))
	}
	final := froms[len(froms)-1][1]
	if !strings.HasPrefix(final, "gcr.io/distroless/static") || !strings.HasSuffix(final, ":nonroot") {
		t.Errorf("final stage %q is not distroless static nonroot", final)
	}
	last := df[strings.LastIndex(df, "\nFROM"):]
	for _, want := range []string{"\nUSER 65532:65532", `ENTRYPOINT ["/kafka-iggy"]`, "EXPOSE 9092 9094"} {
		if !strings.Contains(last, want) {
			t.Errorf("final stage lacks %q", want)
		}
	}
	m := regexp.MustCompile(`(CGO_ENABLED=0 go build .*) -o /out/kafka-iggy (\./cmd/kafka-iggy)`).FindStringSubmatch(df)
	if m == nil {
		t.Fatal("no `CGO_ENABLED=0 go build ... -o /out/kafka-iggy ./cmd/kafka-iggy` in the build stage")
	}
	if testing.Short() {
		t.Skip("-short: not building the binary")
	}
	bin := filepath.Join(t.TempDir(), "kafka-iggy")
	script := strings.ReplaceAll(m[1], "${VERSION}", "test") + " -o " + bin + " " + m[2]
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = ".."
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", script, err, out)
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Fatalf("the binary is dynamically linked (%v)", p.Type)
		}
	}
}
