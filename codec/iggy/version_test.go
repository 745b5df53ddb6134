package iggy

import (
	"errors"
	"testing"

	"github.com/kafka-iggy/kafka-iggy/codec/wire"
)

func TestPackVersion(t *testing.T) {
	tests := []struct {
		major, minor, patch uint32
		want                ProtocolVersion
		str                 string
	}{
		{0, 11, 0, 11264, "0.11.0"},
		{0, 12, 0, 12288, "0.12.0"},
		{0, 11, 3, 11267, "0.11.3"},
		{1, 0, 0, 1 << 20, "1.0.0"},
		{1023, 1023, 1023, 1<<30 - 1, "1023.1023.1023"},
		{1024, 1025, 1026, 1<<10 | 2, "0.1.2"}, // parts keep their low 10 bits
	}
	for _, tc := range tests {
		v := PackVersion(tc.major, tc.minor, tc.patch)
		if v != tc.want || v.String() != tc.str {
			t.Errorf("PackVersion(%d,%d,%d) = %d %q, want %d %q", tc.major, tc.minor, tc.patch, v, v, tc.want, tc.str)
		}
		if v.Major() != tc.major&1023 || v.Minor() != tc.minor&1023 || v.Patch() != tc.patch&1023 {
			t.Errorf("%d: parts %d.%d.%d", v, v.Major(), v.Minor(), v.Patch())
		}
	}
	if Protocol011 != PackVersion(0, 11, 0) || Protocol012 != PackVersion(0, 12, 0) {
		t.Fatal("Protocol011/Protocol012 constants disagree with PackVersion")
	}
}

func TestParseProtocolVersion(t *testing.T) {
	tests := []struct {
		in      string
		want    ProtocolVersion
		wantErr bool
	}{
		{in: "0.11.0", want: 11264},
		{in: "0.11", want: 11264},
		{in: "0.12.7", want: 12295},
		{in: "1023.1023.1023", want: 1<<30 - 1},
		{in: "00.011.000", want: 11264},
		{in: "", wantErr: true},
		{in: "0", wantErr: true},
		{in: "0.", wantErr: true},
		{in: ".11.0", wantErr: true},
		{in: "0..0", wantErr: true},
		{in: "0.11.0.", wantErr: true},
		{in: "0.11.0.1", wantErr: true},
		{in: "v0.11.0", wantErr: true},
		{in: "0.11.0 ", wantErr: true},
		{in: "-1.0.0", wantErr: true},
		{in: "1024.0.0", wantErr: true},
		{in: "0.99999999999999999999.0", wantErr: true},
	}
	for _, tc := range tests {
		got, err := ParseProtocolVersion(tc.in)
		if tc.wantErr {
			var de *wire.DecodeError
			if !errors.Is(err, wire.ErrConstraint) || !errors.As(err, &de) {
				t.Errorf("ParseProtocolVersion(%q) = %d, %v; want a constraint error", tc.in, got, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseProtocolVersion(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
		if again, err := ParseProtocolVersion(got.String()); err != nil || again != got {
			t.Errorf("String/Parse round trip of %d: %d, %v", got, again, err)
		}
	}
}

func TestCompatible(t *testing.T) {
	v := func(s string) ProtocolVersion {
		p, err := ParseProtocolVersion(s)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		client, min, server string
		want                bool
	}{
		{"0.11.0", "0.11.0", "0.11.0", true},
		{"0.11.9", "0.11.0", "0.11.0", true}, // any patch of the server's minor
		{"0.11.0", "0.11.0", "0.11.5", true},
		{"0.12.0", "0.11.0", "0.11.0", false}, // newer minor than the server
		{"0.10.9", "0.11.0", "0.11.0", false}, // below min
		{"0.11.0", "0.11.0", "0.12.0", true},  // older client on a newer server
		{"0.11.3", "0.11.4", "0.12.0", false},
		{"1.0.0", "0.11.0", "0.12.0", false},
	}
	for _, tc := range tests {
		if got := Compatible(v(tc.client), v(tc.min), v(tc.server)); got != tc.want {
			t.Errorf("Compatible(%s, %s, %s) = %v, want %v", tc.client, tc.min, tc.server, got, tc.want)
		}
	}
	// The 0.11 window of §1.10: a client must send 11264..12287.
	for c := ProtocolVersion(11000); c < 13000; c++ {
		if want := c >= 11264 && c <= 12287; Compatible(c, Protocol011, Protocol011) != want {
			t.Fatalf("client %d: want %v", c, want)
		}
	}
}
