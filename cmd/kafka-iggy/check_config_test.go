package main

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// check-config on a valid configuration: YAML on stdout with the secrets
// masked and the sources annotated, exit 0.
func TestCheckConfigValid(t *testing.T) {
	environ := []string{
		"KAFKA_IGGY_IGGY__ADDRESS=iggy.example:8090",
		"KAFKA_IGGY_IGGY__PASSWORD=hunter2-is-secret",
		"KAFKA_IGGY_IGGY__PERSONAL_ACCESS_TOKEN=pat-abcdef-secret",
	}
	args := []string{"--config", examplePath, "--sasl.mode=static", "--sasl.users=alice=alice-pw-secret", "--embedded.root_password=root-pw-secret"}
	var stdout, stderr bytes.Buffer
	if code := checkConfig(args, environ, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr.String())
	}
	out := stdout.String()
	for _, secret := range []string{"hunter2-is-secret", "pat-abcdef-secret", "alice-pw-secret", "root-pw-secret"} {
		if strings.Contains(out, secret) || strings.Contains(stderr.String(), secret) {
			t.Errorf("check-config printed the secret %q", secret)
		}
	}
	for _, want := range []string{
		"  address: iggy.example:8090 # env KAFKA_IGGY_IGGY__ADDRESS\n",
		"  password: '******' # env KAFKA_IGGY_IGGY__PASSWORD\n",
		"  personal_access_token: '******' # env KAFKA_IGGY_IGGY__PERSONAL_ACCESS_TOKEN\n",
		"  users: # file, flag --sasl.users\n    alice: '******'\n",
		"  mode: static # flag --sasl.mode\n",
		"  overrides: # file\n    orders.v1: shop/orders\n",
		"  pool_size: 4 # file\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if !strings.Contains(stderr.String(), "valid") {
		t.Errorf("stderr = %q", stderr.String())
	}

	// The output is a configuration file: loaded back, it gives the same
	// configuration, the masked secrets aside.
	path := filepath.Join(t.TempDir(), "effective.yaml")
	if err := os.WriteFile(path, stdout.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	want, err := loadConfig(args, environ)
	if err != nil {
		t.Fatal(err)
	}
	got, err := loadConfig([]string{"--config", path}, nil)
	if err != nil {
		t.Fatal(err)
	}
	gv, wv := reflect.ValueOf(got), reflect.ValueOf(want)
	for _, lf := range leafIndex().list {
		if secretKeys[lf.key] {
			continue
		}
		if g, w := gv.FieldByIndex(lf.index).Interface(), wv.FieldByIndex(lf.index).Interface(); !reflect.DeepEqual(g, w) {
			t.Errorf("round trip: %s = %#v, want %#v", lf.key, g, w)
		}
	}
}

// check-config on a bad configuration: still prints what it could load,
// then every problem with its key on stderr, exit 1.
func TestCheckConfigProblems(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := checkConfig([]string{"--config", filepath.Join("testdata", "bad_types.yaml")}, []string{"KAFKA_IGGY_IGGY__PASSWORD=x"}, &stdout, &stderr)
	if code != 1 {
		t.Fatalf("exit %d", code)
	}
	if !strings.Contains(stdout.String(), "listener:\n  address: 127.0.0.1:9092") {
		t.Errorf("no effective configuration on stdout:\n%s", stdout.String())
	}
	for _, want := range []string{
		"10 problem(s)",
		"  iggy.pool_size: \"lots\" is not a whole number\n",
		"  iggy.password: length 1 is not 3-100 bytes\n",
		"  gnet.multicore: expected true or false, got 1\n",
	} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
}

func TestCheckConfigUsageAndErrors(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := checkConfig([]string{"--help"}, nil, &stdout, &stderr); code != 0 ||
		!strings.Contains(stdout.String(), "usage: kafka-iggy check-config") ||
		!strings.Contains(stdout.String(), "--iggy.pool_size string") ||
		!strings.Contains(stdout.String(), "env KAFKA_IGGY_IGGY__POOL_SIZE; default 4") {
		t.Errorf("--help: exit %d\n%s", code, stdout.String())
	}
	stdout.Reset()
	if code := checkConfig([]string{"--config", "testdata/missing.yaml"}, nil, &stdout, &stderr); code != 2 || stdout.Len() != 0 {
		t.Errorf("missing file: exit %d, stdout %q", code, stdout.String())
	}
	if code := runCheckConfig([]string{"--bogus"}, &stdout, &stderr); code != 2 {
		t.Errorf("bad flag: exit %d", code)
	}
}
