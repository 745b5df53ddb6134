package deploy

import (
	"bytes"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// byKind indexes rendered documents by kind.
func byKind(t *testing.T, rendered []byte) map[string][]map[string]any {
	t.Helper()
	out := map[string][]map[string]any{}
	for _, d := range docs(t, rendered) {
		k, _ := d["kind"].(string)
		out[k] = append(out[k], d)
	}
	return out
}

// normalise turns a YAML-decoded value into its JSON form (numbers as
// float64) so values from YAML and JSON compare equal.
func normalise(t *testing.T, v any) any {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// appDeployment returns the Deployment that is not the injector.
func appDeployment(t *testing.T, kinds map[string][]map[string]any) map[string]any {
	t.Helper()
	for _, d := range kinds["Deployment"] {
		if dig(d, "metadata", "labels", "app.kubernetes.io/component") != "injector" {
			return d
		}
	}
	t.Fatal("no application Deployment rendered")
	return nil
}

// With injector.enabled the chart renders the injector (Deployment,
// Service, template ConfigMap, TLS Secret, MutatingWebhookConfiguration),
// all valid; the webhook points at the Service with a CA that signed the
// serving certificate for the Service's DNS name; the injector's template
// is exactly the chart's own sidecar and volume.
func TestHelmInjectorSelfSigned(t *testing.T) {
	rendered := helmTemplate(t, []string{"--namespace", "shop", "--set", "injector.enabled=true"})
	for _, v := range kubeVersions {
		s, report := kubeconform(t, v, rendered)
		if s.Valid != 10 || s.Invalid+s.Errors+s.Skipped != 0 { // the chart's 5 (with the NetworkPolicy and the iggy-user Job) and the injector's
			t.Errorf("Kubernetes %s: %+v\n%s", v, s, report)
		}
	}
	kinds := byKind(t, rendered)
	if len(kinds["MutatingWebhookConfiguration"]) != 1 || len(kinds["Service"]) != 1 {
		t.Fatalf("rendered kinds: %v", keys(kinds))
	}
	mwc := kinds["MutatingWebhookConfiguration"][0]
	hook := dig(mwc, "webhooks", 0)
	svc := kinds["Service"][0]
	svcName := dig(svc, "metadata", "name").(string)
	if dig(hook, "clientConfig", "service", "name") != svcName || dig(hook, "clientConfig", "service", "namespace") != "shop" ||
		dig(hook, "clientConfig", "service", "path") != "/mutate" || dig(hook, "sideEffects") != "None" ||
		dig(hook, "failurePolicy") != "Ignore" || dig(hook, "rules", 0, "resources", 0) != "pods" ||
		dig(hook, "rules", 0, "operations", 0) != "CREATE" {
		t.Errorf("webhook: %v", hook)
	}
	if sel := strings.Join(strings.Fields(strings.ReplaceAll(strings.ReplaceAll(fmtJSON(t, dig(hook, "namespaceSelector")), "[", " "), "]", " ")), " "); !strings.Contains(sel, `kafka-iggy.io/inject`) || !strings.Contains(sel, `"disabled"`) || !strings.Contains(sel, `"kube-system"`) {
		t.Errorf("namespaceSelector does not exclude opted-out namespaces: %s", sel)
	}

	// The injector's own pods are never sent to it (with failurePolicy
	// Fail it could not start again otherwise).
	var injPod map[string]any
	for _, d := range kinds["Deployment"] {
		if dig(d, "metadata", "labels", "app.kubernetes.io/component") == "injector" {
			injPod = d
		}
	}
	if dig(hook, "objectSelector", "matchExpressions", 0, "key") != "kafka-iggy.io/injector" ||
		dig(hook, "objectSelector", "matchExpressions", 0, "operator") != "DoesNotExist" ||
		dig(injPod, "spec", "template", "metadata", "labels", "kafka-iggy.io/injector") != "true" {
		t.Errorf("the injector's pods are not excluded: %v", dig(hook, "objectSelector"))
	}

	// The CA in the webhook configuration signed the Secret's certificate
	// for the Service's DNS name.
	var tlsSecret map[string]any
	for _, s := range kinds["Secret"] {
		if dig(s, "type") == "kubernetes.io/tls" {
			tlsSecret = s
		}
	}
	if tlsSecret == nil {
		t.Fatal("no TLS Secret")
	}
	caPEM := b64(t, dig(hook, "clientConfig", "caBundle"))
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		t.Fatalf("caBundle is not a PEM certificate")
	}
	block, _ := pem.Decode(b64(t, dig(tlsSecret, "data", "tls.crt")))
	if block == nil {
		t.Fatal("tls.crt is not PEM")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cert.Verify(x509.VerifyOptions{DNSName: svcName + ".shop.svc", Roots: pool, CurrentTime: time.Now()}); err != nil {
		t.Errorf("the serving certificate does not verify for %s.shop.svc: %v", svcName, err)
	}

	// The injector serves on its port with the template and TLS mounted
	// where its flags say.
	var inj map[string]any
	for _, d := range kinds["Deployment"] {
		if dig(d, "metadata", "labels", "app.kubernetes.io/component") == "injector" {
			inj = d
		}
	}
	c := dig(inj, "spec", "template", "spec", "containers", 0)
	args := fmtJSON(t, dig(c, "args"))
	for _, want := range []string{`"inject"`, `--template=/etc/kafka-iggy-injector/sidecar/sidecar.json`, `--tls-cert=/etc/kafka-iggy-injector/tls/tls.crt`, `--exclude-namespaces=kube-system,kube-public,kube-node-lease`} {
		if !strings.Contains(args, want) {
			t.Errorf("injector args %s lack %s", args, want)
		}
	}
	if dig(c, "readinessProbe", "httpGet", "scheme") != "HTTPS" || dig(inj, "spec", "template", "spec", "volumes", 1, "secret", "secretName") != dig(tlsSecret, "metadata", "name") {
		t.Errorf("injector probes/volumes: %v", dig(inj, "spec", "template", "spec"))
	}

	// One source: the template is the app Deployment's sidecar and volume.
	var tmplCM map[string]any
	for _, cm := range kinds["ConfigMap"] {
		if dig(cm, "data", "sidecar.json") != nil {
			tmplCM = cm
		}
	}
	var tmpl map[string]any
	if err := json.Unmarshal([]byte(dig(tmplCM, "data", "sidecar.json").(string)), &tmpl); err != nil {
		t.Fatal(err)
	}
	pod := dig(appDeployment(t, kinds), "spec", "template")
	if !reflect.DeepEqual(tmpl["initContainer"], normalise(t, dig(pod, "spec", "initContainers", 0))) {
		t.Errorf("the injector's sidecar differs from the Deployment's:\n%s\n%s", fmtJSON(t, tmpl["initContainer"]), fmtJSON(t, dig(pod, "spec", "initContainers", 0)))
	}
	if !reflect.DeepEqual(tmpl["volumes"], normalise(t, dig(pod, "spec", "volumes"))) {
		t.Errorf("volumes differ: %v vs %v", tmpl["volumes"], dig(pod, "spec", "volumes"))
	}
	if dig(tmpl, "podAnnotations", "prometheus.io/scrape") != "true" {
		t.Errorf("podAnnotations: %v", tmpl["podAnnotations"])
	}

	// app.enabled=false leaves the application Deployment out.
	kinds = byKind(t, helmTemplate(t, []string{"--set", "injector.enabled=true,app.enabled=false"}))
	if len(kinds["Deployment"]) != 1 || len(kinds["ConfigMap"]) != 2 {
		t.Errorf("app.enabled=false: %d Deployments, %d ConfigMaps", len(kinds["Deployment"]), len(kinds["ConfigMap"]))
	}
}

// With cert-manager the chart renders an Issuer and a Certificate for the
// Service's names into the Secret the injector mounts, and the webhook
// configuration asks cert-manager for the CA; everything else validates.
func TestHelmInjectorCertManager(t *testing.T) {
	rendered := helmTemplate(t, []string{"--namespace", "shop", "--set", "injector.enabled=true,injector.certManager.enabled=true"})
	kinds := byKind(t, rendered)
	if len(kinds["Issuer"]) != 1 || len(kinds["Certificate"]) != 1 {
		t.Fatalf("rendered kinds: %v", keys(kinds))
	}
	crt := kinds["Certificate"][0]
	svcName := dig(kinds["Service"][0], "metadata", "name").(string)
	if !strings.Contains(fmtJSON(t, dig(crt, "spec", "dnsNames")), svcName+".shop.svc") ||
		dig(crt, "spec", "issuerRef", "name") != dig(kinds["Issuer"][0], "metadata", "name") {
		t.Errorf("Certificate: %v", crt["spec"])
	}
	mwc := kinds["MutatingWebhookConfiguration"][0]
	if dig(mwc, "metadata", "annotations", "cert-manager.io/inject-ca-from") != "shop/"+dig(crt, "metadata", "name").(string) ||
		dig(mwc, "webhooks", 0, "clientConfig", "caBundle") != nil {
		t.Errorf("webhook configuration: %v", mwc["metadata"])
	}
	for _, s := range kinds["Secret"] {
		if dig(s, "type") == "kubernetes.io/tls" {
			t.Error("a generated TLS Secret besides cert-manager's")
		}
	}
	// The rest validates (kubeconform has no schemas for cert-manager's CRDs).
	var rest bytes.Buffer
	for _, d := range docs(t, rendered) {
		if d["apiVersion"] == "cert-manager.io/v1" {
			continue
		}
		out, err := yaml.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		rest.WriteString("---\n")
		rest.Write(out)
	}
	s, report := kubeconform(t, kubeVersions[0], rest.Bytes())
	if s.Valid != 9 || s.Invalid+s.Errors+s.Skipped != 0 {
		t.Errorf("%+v\n%s", s, report)
	}
	// An issuerRef replaces the Issuer.
	kinds = byKind(t, helmTemplate(t, []string{"--set", "injector.enabled=true,injector.certManager.enabled=true,injector.certManager.issuerRef.kind=ClusterIssuer,injector.certManager.issuerRef.name=corp-ca"}))
	if len(kinds["Issuer"]) != 0 || dig(kinds["Certificate"][0], "spec", "issuerRef", "name") != "corp-ca" {
		t.Errorf("issuerRef not used: %v", dig(kinds["Certificate"][0], "spec", "issuerRef"))
	}
}

// The plain manifest's sidecar is the chart's (the one source of the
// container the injector adds), up to the names of the Secret and the
// ConfigMap, which the chart derives from app.name.
func TestManifestSidecarMatchesChart(t *testing.T) {
	raw, err := os.ReadFile("kubernetes/deployment.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var static map[string]any
	if err := yaml.Unmarshal(raw, &static); err != nil {
		t.Fatal(err)
	}
	chart := appDeployment(t, byKind(t, helmTemplate(t, nil)))
	chartSide := fmtJSON(t, dig(chart, "spec", "template", "spec", "initContainers", 0))
	chartSide = strings.ReplaceAll(chartSide, `"orders-app-kafka-iggy-login"`, `"kafka-iggy-iggy-login"`)
	chartSide = strings.ReplaceAll(chartSide, `"orders-app-kafka-iggy-peer"`, `"kafka-iggy-peer"`)
	staticSide := fmtJSON(t, dig(static, "spec", "template", "spec", "initContainers", 0))
	if chartSide != staticSide {
		t.Errorf("deploy/kubernetes/deployment.yaml's sidecar differs from the chart's (templates/_sidecar.tpl):\nchart:  %s\nstatic: %s", chartSide, staticSide)
	}
	if !strings.Contains(string(raw), "kafka-iggy-config") {
		t.Error("no config volume")
	}
	if strings.Contains(staticSide, "GOMEMLIMIT") {
		t.Error("the manifest sets GOMEMLIMIT; the sidecar derives it from its memory budget")
	}
}

func fmtJSON(t *testing.T, v any) string {
	t.Helper()
	out, err := json.Marshal(normalise(t, v))
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

func b64(t *testing.T, v any) []byte {
	t.Helper()
	s, _ := v.(string)
	out, err := base64.StdEncoding.DecodeString(s)
	if err != nil || len(out) == 0 {
		t.Fatalf("not base64: %q", s)
	}
	return out
}

func keys(m map[string][]map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
