package deploy

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// firstOfKind returns the first object of kind in objs.
func firstOfKind(objs []map[string]any, kind string) map[string]any {
	for _, o := range objs {
		if o["kind"] == kind {
			return o
		}
	}
	return nil
}

// checkSecurity holds what issue 27 asks of the shipped objects: the
// sidecar's Iggy login is not root and is created by a Job with its
// streams' permissions only; a NetworkPolicy on the app's pods admits the
// peer port only from those pods and the admin port only from the
// monitoring namespace.
func checkSecurity(t *testing.T, objs []map[string]any, iggyUser string) {
	t.Helper()
	if iggyUser == "" || iggyUser == "iggy" {
		t.Errorf("the sidecar logs in to Iggy as %q (root or none)", iggyUser)
	}
	dep, np, job := firstOfKind(objs, "Deployment"), firstOfKind(objs, "NetworkPolicy"), firstOfKind(objs, "Job")
	if dep == nil || np == nil || job == nil {
		t.Fatalf("Deployment %v, NetworkPolicy %v, Job %v: all three must ship", dep != nil, np != nil, job != nil)
	}
	podLabels := dig(dep, "spec", "template", "metadata", "labels").(map[string]any)
	sel := dig(np, "spec", "podSelector", "matchLabels").(map[string]any)
	for k, v := range sel {
		if podLabels[k] != v {
			t.Errorf("NetworkPolicy selects %s=%v, the app's pods have %v", k, v, podLabels)
		}
	}
	if types := fmt.Sprint(dig(np, "spec", "policyTypes")); types != "[Ingress]" {
		t.Errorf("policyTypes %s, want [Ingress]", types)
	}
	rules, _ := dig(np, "spec", "ingress").([]any)
	seen := map[int]bool{}
	for i, r := range rules {
		from, _ := dig(r, "from").([]any)
		ports, _ := dig(r, "ports").([]any)
		for _, p := range ports {
			port := dig(p, "port")
			switch fmt.Sprint(port) {
			case "9093":
				seen[9093] = true
				if len(from) != 1 || !reflect.DeepEqual(dig(from[0], "podSelector", "matchLabels"), any(sel)) || dig(from[0], "namespaceSelector") != nil {
					t.Errorf("rule %d admits the peer port from %v, want only the app's own pods", i, from)
				}
			case "9094":
				seen[9094] = true
				if len(from) != 1 || dig(from[0], "namespaceSelector", "matchLabels", "kubernetes.io/metadata.name") != "monitoring" || dig(from[0], "podSelector") != nil {
					t.Errorf("rule %d admits the admin port from %v, want only the monitoring namespace", i, from)
				}
			}
		}
		if len(ports) == 0 {
			t.Errorf("rule %d admits every port", i)
		}
	}
	if !seen[9093] || !seen[9094] {
		t.Errorf("NetworkPolicy rules for the peer and admin ports: %v", seen)
	}
	c := dig(job, "spec", "template", "spec", "containers", 0)
	if args := fmt.Sprint(dig(c, "args")); !strings.Contains(args, "iggy-user") || !strings.Contains(args, "--stream=kafka") {
		t.Errorf("the Job runs %s, want kafka-iggy iggy-user --stream=kafka", args)
	}
	if env := fmt.Sprint(dig(c, "env")); !strings.Contains(env, "IGGY_ADMIN_PASSWORD") || !strings.Contains(env, "IGGY_APP_PASSWORD") {
		t.Errorf("the Job's credentials: %s", env)
	}
}

// TestManifestsSecurity: deploy/kubernetes as shipped.
func TestManifestsSecurity(t *testing.T) {
	var raw []byte
	for _, f := range manifestFiles(t) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		raw = append(append(raw, b...), []byte("\n---\n")...)
	}
	objs := docs(t, raw)
	sec := firstOfKind(objs, "Secret")
	checkSecurity(t, objs, fmt.Sprint(dig(sec, "stringData", "username")))
	if _, err := os.Stat(filepath.Join("kubernetes", "networkpolicy.yaml")); err != nil {
		t.Error(err)
	}
}

// TestHelmSecurity: the chart with its defaults.
func TestHelmSecurity(t *testing.T) {
	objs := docs(t, helmTemplate(t, nil))
	user, _ := base64.StdEncoding.DecodeString(fmt.Sprint(dig(firstOfKind(objs, "Secret"), "data", "username")))
	pass, _ := base64.StdEncoding.DecodeString(fmt.Sprint(dig(firstOfKind(objs, "Secret"), "data", "password")))
	if len(pass) < 32 {
		t.Errorf("generated Iggy password of %d bytes, want 32", len(pass))
	}
	checkSecurity(t, objs, string(user))
	// Off when asked.
	off := docs(t, helmTemplate(t, []string{"--set", "networkPolicy.enabled=false", "--set", "iggy.provision.enabled=false"}))
	if firstOfKind(off, "NetworkPolicy") != nil || firstOfKind(off, "Job") != nil {
		t.Error("networkPolicy.enabled=false / iggy.provision.enabled=false still render them")
	}
}
