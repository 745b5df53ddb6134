package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rs/zerolog"
)

// Defaults of `kafka-iggy inject`.
const (
	injectDefaultListen   = "0.0.0.0:8443"
	injectDefaultTemplate = "/etc/kafka-iggy-injector/sidecar/sidecar.json"
	injectDefaultCert     = "/etc/kafka-iggy-injector/tls/tls.crt"
	injectDefaultKey      = "/etc/kafka-iggy-injector/tls/tls.key"
	injectDefaultExclude  = "kube-system,kube-public,kube-node-lease"
	// injectMaxBody bounds an AdmissionReview (the API server sends at
	// most a few hundred KiB for a pod).
	injectMaxBody = 4 << 20
)

// injectOptions are the flags of `kafka-iggy inject`.
type injectOptions struct {
	Listen    string
	Template  string
	Cert, Key string
	Exclude   string
	LogLevel  string
	LogFormat string
}

// injector is the mutating admission webhook: POST /mutate takes an
// AdmissionReview for a Pod CREATE and answers it, with a JSON patch that
// adds the sidecar when the pod asks for it. Safe for concurrent use.
type injector struct {
	tmpl     *sidecarTemplate
	excluded map[string]bool
	log      zerolog.Logger
}

// newInjector builds the webhook from a sidecar template (JSON, see
// sidecarTemplate) and the namespaces it never touches.
func newInjector(template []byte, excluded []string, log zerolog.Logger) (*injector, error) {
	t, err := parseTemplate(template)
	if err != nil {
		return nil, err
	}
	ex := map[string]bool{}
	for _, ns := range excluded {
		if ns = strings.TrimSpace(ns); ns != "" {
			ex[ns] = true
		}
	}
	return &injector{tmpl: t, excluded: ex, log: log}, nil
}

// handler serves /mutate and /healthz.
func (in *injector) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /mutate", in.serveMutate)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("ok\n"))
	})
	return mux
}

// serveMutate answers one AdmissionReview. A request that cannot be read
// as one is answered 400 with an AdmissionReview whose response refuses it
// and says why; a pod the injector cannot patch (a bad override) is
// refused the same way with 200, as the API expects.
func (in *injector) serveMutate(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, injectMaxBody+1))
	if err == nil && len(body) > injectMaxBody {
		err = fmt.Errorf("the request is over %d bytes", injectMaxBody)
	}
	var review admissionReview
	if err == nil {
		err = json.Unmarshal(body, &review)
	}
	if err == nil {
		err = checkReview(&review)
	}
	if err != nil {
		uid := ""
		if review.Request != nil {
			uid = review.Request.UID
		}
		in.log.Warn().Err(err).Str("uid", uid).Msg("malformed AdmissionReview refused")
		writeReview(w, http.StatusBadRequest, refuse(uid, http.StatusBadRequest, "kafka-iggy injector: malformed AdmissionReview: "+err.Error()))
		return
	}
	req := review.Request
	d, err := in.tmpl.mutatePod(req.Object, req.Namespace, in.excluded)
	if err != nil {
		in.log.Warn().Err(err).Str("uid", req.UID).Str("namespace", req.Namespace).Msg("pod refused")
		writeReview(w, http.StatusOK, refuse(req.UID, http.StatusUnprocessableEntity, "kafka-iggy injector: "+err.Error()))
		return
	}
	resp := &admissionResponse{UID: req.UID, Allowed: true}
	if d.patch != nil {
		patch, err := json.Marshal(d.patch)
		if err != nil { // cannot happen: the patch is JSON values
			writeReview(w, http.StatusInternalServerError, refuse(req.UID, http.StatusInternalServerError, err.Error()))
			return
		}
		resp.PatchType, resp.Patch = "JSONPatch", patch
		in.log.Info().Str("uid", req.UID).Str("namespace", req.Namespace).Int("patch_ops", len(d.patch)).Msg("sidecar injected")
	} else {
		in.log.Debug().Str("uid", req.UID).Str("namespace", req.Namespace).Str("reason", d.skip).Msg("pod left alone")
	}
	writeReview(w, http.StatusOK, resp)
}

// checkReview checks what serveMutate relies on.
func checkReview(r *admissionReview) error {
	switch {
	case r.APIVersion != "admission.k8s.io/v1" || r.Kind != "AdmissionReview":
		return fmt.Errorf("apiVersion %q kind %q, want admission.k8s.io/v1 AdmissionReview", r.APIVersion, r.Kind)
	case r.Request == nil:
		return errors.New("no request")
	case r.Request.UID == "":
		return errors.New("request.uid is empty")
	case r.Request.Kind.Kind != "Pod" || r.Request.Kind.Group != "":
		return fmt.Errorf("request.kind %s/%s, want Pod", r.Request.Kind.Group, r.Request.Kind.Kind)
	case len(r.Request.Object) == 0 || r.Request.Object[0] != '{':
		return errors.New("request.object is not a JSON object")
	}
	return nil
}

func refuse(uid string, code int, msg string) *admissionResponse {
	return &admissionResponse{UID: uid, Allowed: false, Result: &statusResult{Code: code, Message: msg}}
}

func writeReview(w http.ResponseWriter, status int, resp *admissionResponse) {
	out, _ := json.Marshal(admissionReview{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview", Response: resp})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(out)
}

// certReloader serves the key pair from its files and rereads them when
// they change (cert-manager renews the Secret; the kubelet updates the
// mounted files), so a renewal needs no restart.
type certReloader struct {
	cert, key string

	mu      sync.Mutex
	mod     time.Time
	current *tls.Certificate
}

func (c *certReloader) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st, err := os.Stat(c.cert)
	if err != nil {
		if c.current != nil {
			return c.current, nil
		}
		return nil, err
	}
	if c.current == nil || !st.ModTime().Equal(c.mod) {
		kp, err := tls.LoadX509KeyPair(c.cert, c.key)
		if err != nil {
			if c.current != nil {
				return c.current, nil // mid-update: keep the old pair
			}
			return nil, err
		}
		c.current, c.mod = &kp, st.ModTime()
	}
	return c.current, nil
}

// runInject is `kafka-iggy inject`: the sidecar injector.
func runInject(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("inject", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o injectOptions
	fs.StringVar(&o.Listen, "listen", injectDefaultListen, "HTTPS host:port of the webhook")
	fs.StringVar(&o.Template, "template", injectDefaultTemplate, "the sidecar template (JSON: initContainer, volumes, podAnnotations), rendered by the Helm chart")
	fs.StringVar(&o.Cert, "tls-cert", injectDefaultCert, "PEM certificate of the webhook (reread when it changes)")
	fs.StringVar(&o.Key, "tls-key", injectDefaultKey, "PEM private key of the webhook")
	fs.StringVar(&o.Exclude, "exclude-namespaces", injectDefaultExclude, "comma-separated namespaces whose pods are never touched")
	fs.StringVar(&o.LogLevel, "log-level", "info", "trace | debug | info | warn | error")
	fs.StringVar(&o.LogFormat, "log-format", LogFormatAuto, "auto | json | console")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	log := newLogger(LogConfig{Level: o.LogLevel, Format: o.LogFormat}, stderr).With().Str("component", "injector").Logger()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := serveInject(ctx, o, log, nil); err != nil {
		log.Error().Err(err).Msg("injector stopped with an error")
		return 1
	}
	return 0
}

// serveInject serves the webhook until ctx ends; onListen, when set, gets
// the bound address (tests).
func serveInject(ctx context.Context, o injectOptions, log zerolog.Logger, onListen func(net.Addr)) error {
	raw, err := os.ReadFile(o.Template)
	if err != nil {
		return fmt.Errorf("--template: %w", err)
	}
	in, err := newInjector(raw, strings.Split(o.Exclude, ","), log)
	if err != nil {
		return err
	}
	certs := &certReloader{cert: o.Cert, key: o.Key}
	if _, err := certs.get(nil); err != nil {
		return fmt.Errorf("--tls-cert/--tls-key: %w", err)
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", o.Listen)
	if err != nil {
		return fmt.Errorf("--listen: %w", err)
	}
	srv := &http.Server{
		Handler:           in.handler(),
		ReadHeaderTimeout: 5 * time.Second,
		TLSConfig:         &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: certs.get},
	}
	done := make(chan error, 1)
	go func() { done <- srv.ServeTLS(ln, "", "") }()
	log.Info().Str("address", ln.Addr().String()).Str("template", o.Template).Str("sidecar", in.tmpl.name()).
		Str("exclude_namespaces", o.Exclude).Msg("sidecar injector up")
	if onListen != nil {
		onListen(ln.Addr())
	}
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
