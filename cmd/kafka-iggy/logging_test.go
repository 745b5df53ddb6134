package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestJSONLogger(t *testing.T) {
	var buf bytes.Buffer
	log := newLogger(LogConfig{Level: "info", Format: "json"}, &buf)
	log.Debug().Msg("hidden")
	log.Info().Uint64("conn_id", 7).Int16("api_key", 0).Int32("corr_id", 3).Msg("shown")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 1 {
		t.Fatalf("want one line (debug filtered), got %q", buf.String())
	}
	var rec map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &rec); err != nil {
		t.Fatal(err)
	}
	if rec["level"] != "info" || rec["message"] != "shown" || rec["conn_id"] != float64(7) || rec["corr_id"] != float64(3) {
		t.Errorf("record = %v", rec)
	}
	ts, ok := rec["time"].(string)
	if !ok {
		t.Fatalf("no time in %v", rec)
	}
	if tm, err := time.Parse(time.RFC3339Nano, ts); err != nil || time.Since(tm) > time.Minute {
		t.Errorf("time %q: %v", ts, err)
	}
}

func TestConsoleLoggerAndLevels(t *testing.T) {
	var buf bytes.Buffer
	log := newLogger(LogConfig{Level: "DEBUG", Format: "console"}, &buf)
	log.Debug().Str("component", "proxy").Msg("human readable")
	out := buf.String()
	if strings.HasPrefix(strings.TrimSpace(out), "{") || !strings.Contains(out, "human readable") ||
		!strings.Contains(out, "component=proxy") || strings.Contains(out, "\x1b[") {
		t.Errorf("console output = %q", out)
	}
	for level, logged := range map[string][]bool{
		"trace": {true, true, true}, "debug": {false, true, true}, "warn": {false, false, true}, "error": {false, false, false},
	} {
		buf.Reset()
		l := newLogger(LogConfig{Level: level, Format: "json"}, &buf)
		l.Trace().Msg("t")
		got := []bool{buf.Len() > 0}
		l.Debug().Msg("d")
		got = append(got, buf.Len() > 0)
		l.Warn().Msg("w")
		got = append(got, buf.Len() > 0)
		if got[0] != logged[0] || got[1] != logged[1] || got[2] != logged[2] {
			t.Errorf("level %s: trace/debug/warn logged %v, want %v", level, got, logged)
		}
	}
}

// The configuration logged as an object carries every key and no secret.
func TestConfigLoggedWithoutSecrets(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Iggy.Address = "iggy:8090"
	cfg.Iggy.Password = "log-me-not-1"
	cfg.Iggy.PersonalAccessToken = "log-me-not-2"
	cfg.Embedded.Server.RootPassword = "log-me-not-3"
	cfg.SASL.Users = map[string]string{"bob": "log-me-not-4"}
	var buf bytes.Buffer
	log := newLogger(LogConfig{Level: "info", Format: "json"}, &buf)
	log.Info().Object("config", cfg).Msg("starting")
	out := buf.String()
	if strings.Contains(out, "log-me-not") {
		t.Fatalf("a secret reached the log: %s", out)
	}
	var rec struct {
		Config map[string]any `json:"config"`
	}
	if err := json.Unmarshal([]byte(out), &rec); err != nil {
		t.Fatal(err)
	}
	for _, lf := range leafIndex().list {
		if _, ok := rec.Config[lf.key]; !ok {
			t.Errorf("%s not logged", lf.key)
		}
	}
	if rec.Config["iggy.address"] != "iggy:8090" || rec.Config["iggy.password"] != maskedValue || rec.Config["sasl.users"] != "{bob: ******}" {
		t.Errorf("logged config: %v", rec.Config)
	}
}
