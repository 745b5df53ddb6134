package iggy

import (
	"math"
	"math/big"
	"math/bits"
	"strconv"
	"strings"
)

// Option values sent as String are parsed the way the server parses them
// (reference §6.1); the embedded server and the bridge's Kafka config
// mapping share this one implementation.

// ParseOptionString parses a String option value of spec (§6.1). A choice
// reads as its index in spec.Choices.
func ParseOptionString(spec *OptionSpec, s string) (uint64, bool) {
	switch spec.Parse {
	case OptionParseChoice:
		for i, c := range spec.Choices {
			if strings.EqualFold(c, s) {
				return uint64(i), true
			}
		}
	case OptionParseDuration:
		switch strings.ToLower(s) {
		case "none", "unlimited", "never_expire":
			return math.MaxUint64, true
		case "default", "server_default":
			return 0, true
		}
		return ParseHumanDuration(s)
	case OptionParseByteSize:
		switch strings.ToLower(s) {
		case "unlimited":
			return math.MaxUint64, true
		case "0", "server_default":
			return 0, true
		}
		return ParseByteSize(s)
	case OptionParseBool:
		switch s {
		case "true":
			return 1, true
		case "false":
			return 0, true
		}
	case OptionParseDecimal:
		n, err := strconv.ParseUint(s, 10, 64)
		return n, err == nil
	case OptionParseCompression:
		switch strings.ToLower(s) {
		case "none":
			return uint64(CompressionAlgorithmNone), true
		case "gzip":
			return uint64(CompressionAlgorithmGzip), true
		}
	}
	return 0, false
}

// durationUnitsNs are humantime's units in nanoseconds (a month is 30.44
// days and a year 365.25 days, as humantime defines them).
var durationUnitsNs = map[string]uint64{
	"nsec": 1, "ns": 1,
	"usec": 1e3, "us": 1e3, "µs": 1e3,
	"msec": 1e6, "ms": 1e6,
	"seconds": 1e9, "second": 1e9, "sec": 1e9, "s": 1e9,
	"minutes": 60e9, "minute": 60e9, "min": 60e9, "mins": 60e9, "m": 60e9,
	"hours": 3600e9, "hour": 3600e9, "hr": 3600e9, "hrs": 3600e9, "h": 3600e9,
	"days": 86400e9, "day": 86400e9, "d": 86400e9,
	"weeks": 604800e9, "week": 604800e9, "w": 604800e9,
	"months": 2630016e9, "month": 2630016e9, "M": 2630016e9,
	"years": 31557600e9, "year": 31557600e9, "y": 31557600e9,
}

// maxStringDurationNs is the longest duration a String option may carry:
// 2^32-1 seconds (§6.1).
const maxStringDurationNs = uint64(math.MaxUint32) * 1e9

// ParseHumanDuration parses a humantime duration ("7 days", "1h 30m",
// "1h30m", "90s") into microseconds: one or more integer-and-unit
// components, spaces allowed between and inside them. At most 2^32-1 s.
func ParseHumanDuration(s string) (uint64, bool) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, false
	}
	var total uint64
	for s != "" {
		i := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == 0 {
			return 0, false
		}
		n, err := strconv.ParseUint(s[:i], 10, 64)
		if err != nil {
			return 0, false
		}
		s = strings.TrimLeft(s[i:], " ")
		j := 0
		for j < len(s) && s[j] != ' ' && (s[j] < '0' || s[j] > '9') {
			j++
		}
		unit, ok := durationUnitsNs[s[:j]]
		if !ok {
			return 0, false
		}
		hi, part := bits.Mul64(n, unit)
		if hi != 0 {
			return 0, false
		}
		var carry uint64
		total, carry = bits.Add64(total, part, 0)
		if carry != 0 || total > maxStringDurationNs {
			return 0, false
		}
		s = strings.TrimLeft(s[j:], " ")
	}
	return total / 1e3, true
}

// byteUnits are the byte-size units: decimal (KB, MB, ...) and binary
// (KiB, MiB, ...), matched case-insensitively; no unit means bytes.
var byteUnits = map[string]uint64{
	"": 1, "b": 1,
	"k": 1e3, "kb": 1e3, "kib": 1 << 10,
	"m": 1e6, "mb": 1e6, "mib": 1 << 20,
	"g": 1e9, "gb": 1e9, "gib": 1 << 30,
	"t": 1e12, "tb": 1e12, "tib": 1 << 40,
	"p": 1e15, "pb": 1e15, "pib": 1 << 50,
	"e": 1e18, "eb": 1e18, "eib": 1 << 60,
}

// ParseByteSize parses "1 GiB", "500MB", "1.5 GB" or "1024" into bytes
// (fractions of a byte are dropped). It refuses values beyond u64.
func ParseByteSize(s string) (uint64, bool) {
	s = strings.TrimSpace(s)
	i, dots := 0, 0
	for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.') {
		if s[i] == '.' {
			dots++
		}
		i++
	}
	num := s[:i]
	if num == "" || dots > 1 || num == "." {
		return 0, false
	}
	unit, ok := byteUnits[strings.ToLower(strings.TrimSpace(s[i:]))]
	if !ok {
		return 0, false
	}
	r, ok := new(big.Rat).SetString(num)
	if !ok {
		return 0, false
	}
	r.Mul(r, new(big.Rat).SetUint64(unit))
	n := new(big.Int).Quo(r.Num(), r.Denom())
	if !n.IsUint64() {
		return 0, false
	}
	return n.Uint64(), true
}
