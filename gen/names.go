package main

import (
	"strings"
	"unicode"
)

// initialisms are written in upper case in Go names (Go's naming convention).
var initialisms = map[string]string{
	"id": "ID", "ids": "IDs", "utf8": "UTF8", "tcp": "TCP", "quic": "QUIC", "http": "HTTP",
	"json": "JSON", "url": "URL", "ip": "IP", "jwt": "JWT", "tls": "TLS", "api": "API",
	"cpu": "CPU", "os": "OS", "uuid": "UUID", "jwks": "JWKS", "xxh3": "XXH3", "xxh32": "XXH32",
	"pat": "PAT",
}

// goName turns snake_case or CamelCase into an exported Go name with
// initialisms: stream_id -> StreamID, StreamIdNotFound -> StreamIDNotFound.
func goName(s string) string {
	var b strings.Builder
	for _, w := range words(s) {
		if up, ok := initialisms[strings.ToLower(w)]; ok {
			b.WriteString(up)
			continue
		}
		r := []rune(w)
		r[0] = unicode.ToUpper(r[0])
		b.WriteString(string(r))
	}
	return b.String()
}

// words splits snake_case and CamelCase identifiers into words; digits stay
// with the preceding letters (Utf8 -> ["Utf8"]).
func words(s string) []string {
	var out []string
	for _, part := range strings.Split(s, "_") {
		if part == "" {
			continue
		}
		start := 0
		r := []rune(part)
		for i := 1; i < len(r); i++ {
			if unicode.IsUpper(r[i]) && !unicode.IsUpper(r[i-1]) {
				out = append(out, string(r[start:i]))
				start = i
			} else if unicode.IsUpper(r[i]) && i+1 < len(r) && unicode.IsLower(r[i+1]) && unicode.IsUpper(r[i-1]) {
				out = append(out, string(r[start:i]))
				start = i
			}
		}
		out = append(out, string(r[start:]))
	}
	return out
}

// snake turns CamelCase into snake_case (TopicDetails -> topic_details).
func snake(s string) string {
	ws := words(s)
	for i, w := range ws {
		ws[i] = strings.ToLower(w)
	}
	return strings.Join(ws, "_")
}

// comment formats a doc string as // lines.
func comment(doc, indent string) string {
	doc = strings.TrimSpace(doc)
	if doc == "" {
		return ""
	}
	var b strings.Builder
	for _, line := range strings.Split(doc, "\n") {
		line = strings.TrimRight(line, " \t")
		if line == "" {
			b.WriteString(indent + "//\n")
			continue
		}
		b.WriteString(indent + "// " + line + "\n")
	}
	return b.String()
}

// docFor prefixes a doc with the identifier when it does not start with it,
// as godoc expects.
func docFor(ident, doc string) string {
	doc = strings.TrimSpace(doc)
	if strings.HasPrefix(doc, ident+" ") {
		return doc
	}
	return ident + ": " + doc
}
