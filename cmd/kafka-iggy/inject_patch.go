package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// The admission webhook's wire types: the parts of the AdmissionReview v1
// API (admission.k8s.io/v1) the injector reads and writes, written here
// rather than imported from k8s.io/api, which would pull the Kubernetes
// type tree and apimachinery into the sidecar's binary for a dozen fields.
type admissionReview struct {
	APIVersion string             `json:"apiVersion"`
	Kind       string             `json:"kind"`
	Request    *admissionRequest  `json:"request,omitempty"`
	Response   *admissionResponse `json:"response,omitempty"`
}

type admissionRequest struct {
	UID       string           `json:"uid"`
	Kind      groupVersionKind `json:"kind"`
	Namespace string           `json:"namespace"`
	Operation string           `json:"operation"`
	Object    json.RawMessage  `json:"object"`
}

type groupVersionKind struct {
	Group   string `json:"group"`
	Version string `json:"version"`
	Kind    string `json:"kind"`
}

type admissionResponse struct {
	UID       string        `json:"uid"`
	Allowed   bool          `json:"allowed"`
	PatchType string        `json:"patchType,omitempty"`
	Patch     []byte        `json:"patch,omitempty"` // base64 in JSON, as the API wants
	Result    *statusResult `json:"status,omitempty"`
	Warnings  []string      `json:"warnings,omitempty"`
}

type statusResult struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// patchOp is one RFC 6902 operation; the injector only adds.
type patchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value"`
}

// podShape is what the injector reads of a Pod.
type podShape struct {
	Metadata struct {
		Name         string            `json:"name"`
		GenerateName string            `json:"generateName"`
		Annotations  map[string]string `json:"annotations"`
	} `json:"metadata"`
	Spec struct {
		InitContainers []struct {
			Name string `json:"name"`
		} `json:"initContainers"`
		Containers []struct {
			Name string `json:"name"`
		} `json:"containers"`
		Volumes []struct {
			Name string `json:"name"`
		} `json:"volumes"`
	} `json:"spec"`
}

// The annotations the injector reads (on the pod template) and writes.
const (
	annotationPrefix = "kafka-iggy.io/"
	// annInject "true" asks for the sidecar.
	annInject = annotationPrefix + "inject"
	// annStatus is set on an injected pod ("injected").
	annStatus = annotationPrefix + "status"
	// Per-pod overrides.
	annIggyAddress = annotationPrefix + "iggy-address"
	annDomain      = annotationPrefix + "coordination-domain"
	annSecret      = annotationPrefix + "secret"
	annConfigMap   = annotationPrefix + "config-map"
	annCPURequest  = annotationPrefix + "cpu-request"
	annCPULimit    = annotationPrefix + "cpu-limit"
	annMemRequest  = annotationPrefix + "memory-request"
	annMemLimit    = annotationPrefix + "memory-limit"
)

// sidecarTemplate is what the injector adds, read from the file the Helm
// chart renders from the same template as its own Deployment's sidecar
// (templates/_sidecar.tpl), so the two cannot drift.
type sidecarTemplate struct {
	// InitContainer is the native sidecar (restartPolicy: Always).
	InitContainer map[string]any `json:"initContainer"`
	// Volumes are the pod volumes it mounts (the configuration ConfigMap).
	Volumes []map[string]any `json:"volumes"`
	// PodAnnotations are added where the pod does not set them already
	// (the Prometheus scrape annotations).
	PodAnnotations map[string]string `json:"podAnnotations"`
}

// parseTemplate checks a template: a named native sidecar with an image.
func parseTemplate(raw []byte) (*sidecarTemplate, error) {
	var t sidecarTemplate
	if err := json.Unmarshal(raw, &t); err != nil {
		return nil, fmt.Errorf("sidecar template: %w", err)
	}
	name, _ := t.InitContainer["name"].(string)
	image, _ := t.InitContainer["image"].(string)
	if name == "" || image == "" {
		return nil, errors.New("sidecar template: initContainer needs a name and an image")
	}
	if t.InitContainer["restartPolicy"] != "Always" {
		return nil, errors.New("sidecar template: initContainer must be a native sidecar (restartPolicy: Always)")
	}
	return &t, nil
}

func (t *sidecarTemplate) name() string { s, _ := t.InitContainer["name"].(string); return s }

// quantityRE is the syntax of a Kubernetes resource quantity (100m, 64Mi,
// 1.5, 2e3).
var quantityRE = regexp.MustCompile(`^[+]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+|[munkMGTPE]i?|Ki)?$`)

// hostPortRE is host:port for the Iggy address override.
var hostPortRE = regexp.MustCompile(`^[A-Za-z0-9.\-\[\]:]+:[0-9]{1,5}$`)

// decision is what the injector does with one pod.
type decision struct {
	patch []patchOp
	skip  string // why no patch ("" when patched)
}

// mutatePod decides for the pod raw in namespace ns: no patch when it does
// not ask for the sidecar, already has it, or lives in an excluded
// namespace; otherwise the JSON patch that adds it. An annotation with a
// bad value is an error (the pod is refused with the reason rather than
// started without a working sidecar).
func (t *sidecarTemplate) mutatePod(raw []byte, ns string, excluded map[string]bool) (decision, error) {
	var pod podShape
	if err := json.Unmarshal(raw, &pod); err != nil {
		return decision{}, fmt.Errorf("the object is not a Pod: %w", err)
	}
	ann := pod.Metadata.Annotations
	switch {
	case excluded[ns]:
		return decision{skip: "namespace " + ns + " is excluded"}, nil
	case ann[annInject] != "true":
		return decision{skip: "no " + annInject + `: "true" annotation`}, nil
	case ann[annStatus] != "":
		return decision{skip: "already injected (" + annStatus + ")"}, nil
	}
	name := t.name()
	for _, c := range pod.Spec.InitContainers {
		if c.Name == name {
			return decision{skip: "already has an init container " + name}, nil
		}
	}
	for _, c := range pod.Spec.Containers {
		if c.Name == name {
			return decision{skip: "already has a container " + name}, nil
		}
	}
	side, err := t.container(ann)
	if err != nil {
		return decision{}, err
	}
	var ops []patchOp
	// First among the init containers: the native sidecar runs before the
	// others, so they can use Kafka too.
	if len(pod.Spec.InitContainers) == 0 {
		ops = append(ops, patchOp{Op: "add", Path: "/spec/initContainers", Value: []any{side}})
	} else {
		ops = append(ops, patchOp{Op: "add", Path: "/spec/initContainers/0", Value: side})
	}
	have := map[string]bool{}
	for _, v := range pod.Spec.Volumes {
		have[v.Name] = true
	}
	var vols []any
	for _, v := range t.Volumes {
		v = cloneMap(v)
		if cm := ann[annConfigMap]; cm != "" {
			if ref, ok := v["configMap"].(map[string]any); ok {
				ref["name"] = cm
			}
		}
		if n, _ := v["name"].(string); !have[n] {
			vols = append(vols, v)
		}
	}
	if len(vols) > 0 {
		if len(pod.Spec.Volumes) == 0 {
			ops = append(ops, patchOp{Op: "add", Path: "/spec/volumes", Value: vols})
		} else {
			for _, v := range vols {
				ops = append(ops, patchOp{Op: "add", Path: "/spec/volumes/-", Value: v})
			}
		}
	}
	adds := map[string]string{annStatus: "injected"}
	if ann["prometheus.io/scrape"] == "" {
		for k, v := range t.PodAnnotations {
			adds[k] = v
		}
	}
	if len(ann) == 0 {
		ops = append(ops, patchOp{Op: "add", Path: "/metadata/annotations", Value: adds})
	} else {
		for _, k := range sortedKeys(adds) {
			if _, ok := ann[k]; !ok {
				ops = append(ops, patchOp{Op: "add", Path: "/metadata/annotations/" + escapePointer(k), Value: adds[k]})
			}
		}
	}
	return decision{patch: ops}, nil
}

// container is the template's sidecar with the pod's overrides applied.
func (t *sidecarTemplate) container(ann map[string]string) (map[string]any, error) {
	c := cloneMap(t.InitContainer)
	var env []any
	if l, ok := c["env"].([]any); ok {
		env = l
	}
	setEnv := func(name, value string) {
		for i, e := range env {
			if m, ok := e.(map[string]any); ok && m["name"] == name {
				env[i] = map[string]any{"name": name, "value": value}
				return
			}
		}
		env = append(env, map[string]any{"name": name, "value": value})
	}
	if a := ann[annIggyAddress]; a != "" {
		if !hostPortRE.MatchString(a) {
			return nil, fmt.Errorf("%s: %q is not host:port", annIggyAddress, a)
		}
		setEnv("KAFKA_IGGY_IGGY__ADDRESS", a)
	}
	if d := ann[annDomain]; d != "" {
		if strings.ContainsAny(d, " \t\n") || len(d) > 253 {
			return nil, fmt.Errorf("%s: %q is not a domain name", annDomain, d)
		}
		setEnv("KAFKA_IGGY_COORDINATION__DOMAIN", d)
	}
	if s := ann[annSecret]; s != "" {
		for _, e := range env {
			if ref, ok := jsonPath(e, "valueFrom", "secretKeyRef").(map[string]any); ok {
				ref["name"] = s
			}
		}
	}
	if env != nil {
		c["env"] = env
	}
	res, _ := c["resources"].(map[string]any)
	if res == nil {
		res = map[string]any{}
	}
	for _, o := range []struct{ ann, kind, name string }{
		{annCPURequest, "requests", "cpu"}, {annCPULimit, "limits", "cpu"},
		{annMemRequest, "requests", "memory"}, {annMemLimit, "limits", "memory"},
	} {
		q := ann[o.ann]
		if q == "" {
			continue
		}
		if !quantityRE.MatchString(q) {
			return nil, fmt.Errorf("%s: %q is not a resource quantity", o.ann, q)
		}
		m, _ := res[o.kind].(map[string]any)
		if m == nil {
			m = map[string]any{}
			res[o.kind] = m
		}
		m[o.name] = q
	}
	if len(res) > 0 {
		c["resources"] = res
	}
	return c, nil
}

// jsonPath walks nested maps.
func jsonPath(v any, path ...string) any {
	for _, k := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

// cloneMap deep-copies a JSON value tree so a patch never shares the
// template's maps.
func cloneMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = cloneValue(v)
	}
	return out
}

func cloneValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		return cloneMap(x)
	case []any:
		l := make([]any, len(x))
		for i, e := range x {
			l[i] = cloneValue(e)
		}
		return l
	}
	return v
}

// sortedKeys returns m's keys in order (a patch is the same every time).
func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// escapePointer escapes a key for a JSON pointer (RFC 6901).
func escapePointer(k string) string {
	return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
}
