package main

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

var (
	snakeRe = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	camelRe = regexp.MustCompile(`^[A-Z][A-Za-z0-9]*$`)
	verRe   = regexp.MustCompile(`^(\d+)\.(\d+)\.(\d+)$`)
	dotRe   = regexp.MustCompile(`^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$`)
)

var scalarSizes = map[string]int{
	"u8": 1, "u16": 2, "u32": 4, "u64": 8, "u128": 16,
	"i8": 1, "i16": 2, "i32": 4, "i64": 8, "f32": 4, "f64": 8,
	"bool": 1, "flag": 1,
}

var builtinTypes = map[string]bool{
	"name": true, "str8": true, "str32": true, "bytes8": true, "bytes32": true,
	"fixed": true, "rest": true, "options": true, "batches": true, "batch": true,
	"list": true, "optional": true,
}

var integerTypes = map[string]bool{"u8": true, "u16": true, "u32": true, "u64": true, "i8": true, "i16": true, "i32": true, "i64": true}

// domainCodes gives each command domain its block of codes (reference §3.0).
var domainCodes = map[string][2]uint32{
	"system":                 {1, 29},
	"users":                  {30, 40},
	"personal_access_tokens": {41, 45},
	"messages":               {100, 119},
	"consumer_offsets":       {120, 199},
	"streams":                {200, 299},
	"topics":                 {300, 399},
	"partitions":             {400, 499},
	"segments":               {500, 599},
	"consumer_groups":        {600, 699},
}

var opClasses = map[string]bool{"session": true, "non_replicated": true, "internal": true, "metadata": true, "partition": true, "special": true}

func packVersion(p Pos, v string) (uint32, error) {
	m := verRe.FindStringSubmatch(v)
	if m == nil {
		return 0, errAt(p, "version %q is not major.minor.patch", v)
	}
	var out uint32
	for i, shift := range []uint{20, 10, 0} {
		n, _ := strconv.Atoi(m[i+1])
		if n > 1023 {
			return 0, errAt(p, "version %q: component above 1023", v)
		}
		out |= uint32(n) << shift
	}
	return out, nil
}

func (s *Schema) checkVersions(p Pos, since, until string) error {
	var lo, hi uint32
	var err error
	if since != "" {
		if lo, err = packVersion(p, since); err != nil {
			return err
		}
		if !s.knownProtocol(lo) {
			return errAt(p, "since %q is not a protocol listed in protocol.yaml", since)
		}
	}
	if until != "" {
		if hi, err = packVersion(p, until); err != nil {
			return err
		}
		if !s.knownProtocol(hi) {
			return errAt(p, "until %q is not a protocol listed in protocol.yaml", until)
		}
		if since != "" && hi <= lo {
			return errAt(p, "until %q is not after since %q", until, since)
		}
	}
	return nil
}

func (s *Schema) knownProtocol(v uint32) bool {
	for _, p := range s.protocols {
		if p.Packed == v {
			return true
		}
	}
	return false
}

// inProtocol reports whether an item with since/until exists in protocol p.
func inProtocol(p *ProtocolDef, since, until string) bool {
	if since != "" {
		v, _ := packVersion(Pos{}, since)
		if p.Packed < v {
			return false
		}
	}
	if until != "" {
		v, _ := packVersion(Pos{}, until)
		if p.Packed >= v {
			return false
		}
	}
	return true
}

func needDoc(p Pos, what, doc string) error {
	if strings.TrimSpace(doc) == "" {
		return errAt(p, "%s: doc is required", what)
	}
	return nil
}

func (s *Schema) resolve() error {
	// Protocols.
	seenP := map[uint32]bool{}
	for _, p := range s.Protocol.Protocols {
		v, err := packVersion(p.Pos, p.Version)
		if err != nil {
			return err
		}
		if v != p.Packed {
			return errAt(p.Pos, "protocol %s packs to %d, not %d", p.Version, v, p.Packed)
		}
		if seenP[v] {
			return errAt(p.Pos, "duplicate protocol %s", p.Version)
		}
		seenP[v] = true
		if err := needDoc(p.Pos, "protocol "+p.Version, p.Doc); err != nil {
			return err
		}
		s.protocols = append(s.protocols, p)
	}
	if len(s.protocols) == 0 {
		return errAt(Pos{"schema/protocol.yaml", 1}, "no protocols")
	}
	sort.Slice(s.protocols, func(i, j int) bool { return s.protocols[i].Packed < s.protocols[j].Packed })

	// Limits.
	seenL := map[string]bool{}
	for _, l := range s.Protocol.Limits {
		if !snakeRe.MatchString(l.Name) {
			return errAt(l.Pos, "limit name %q must be snake_case", l.Name)
		}
		if seenL[l.Name] {
			return errAt(l.Pos, "duplicate limit %q", l.Name)
		}
		seenL[l.Name] = true
		if err := needDoc(l.Pos, "limit "+l.Name, l.Doc); err != nil {
			return err
		}
	}

	// Enums.
	s.enums = map[string]*EnumDef{}
	addEnums := func(list []*EnumDef) error {
		for _, e := range list {
			if err := s.checkEnum(e); err != nil {
				return err
			}
			if _, dup := s.enums[e.Name]; dup {
				return errAt(e.Pos, "duplicate enum %q", e.Name)
			}
			s.enums[e.Name] = e
		}
		return nil
	}
	if err := addEnums(s.Protocol.Enums); err != nil {
		return err
	}
	for _, f := range s.Encodings {
		if err := addEnums(f.Enums); err != nil {
			return err
		}
	}
	for _, c := range s.Commands {
		if err := addEnums(c.Enums); err != nil {
			return err
		}
	}

	// Operations.
	s.ops = map[string]*OpDef{}
	seenOpV := map[int64]string{}
	for _, o := range s.Protocol.Operations {
		if !camelRe.MatchString(o.Name) {
			return errAt(o.Pos, "operation name %q must be CamelCase", o.Name)
		}
		if _, dup := s.ops[o.Name]; dup {
			return errAt(o.Pos, "duplicate operation %q", o.Name)
		}
		if prev, dup := seenOpV[o.Value]; dup {
			return errAt(o.Pos, "operation %q reuses value %d of %q", o.Name, o.Value, prev)
		}
		if o.Value < 0 || o.Value > 255 {
			return errAt(o.Pos, "operation %q: value %d does not fit a byte", o.Name, o.Value)
		}
		if !opClasses[o.Class] {
			return errAt(o.Pos, "operation %q: unknown class %q", o.Name, o.Class)
		}
		switch o.ResultFramed {
		case "yes", "no", "when_body":
		default:
			return errAt(o.Pos, "operation %q: result_framed must be yes, no or when_body", o.Name)
		}
		if err := s.checkVersions(o.Pos, o.Since, o.Until); err != nil {
			return err
		}
		if err := needDoc(o.Pos, "operation "+o.Name, o.Doc); err != nil {
			return err
		}
		s.ops[o.Name] = o
		seenOpV[o.Value] = o.Name
	}

	// Layouts.
	seenLay := map[string]bool{}
	var layouts []*LayoutDef
	layouts = append(layouts, s.Protocol.Layouts...)
	for _, f := range s.Encodings {
		layouts = append(layouts, f.Layouts...)
	}
	for _, l := range layouts {
		if seenLay[l.Name] {
			return errAt(l.Pos, "duplicate layout %q", l.Name)
		}
		seenLay[l.Name] = true
		if err := s.checkLayout(l); err != nil {
			return err
		}
	}

	// Types.
	s.types = map[string]*TypeDef{}
	s.typeFile = map[string]string{}
	addTypes := func(list []*TypeDef, owner string) error {
		for _, t := range list {
			if !camelRe.MatchString(t.Name) {
				return errAt(t.Pos, "type name %q must be CamelCase", t.Name)
			}
			if _, dup := s.types[t.Name]; dup {
				return errAt(t.Pos, "duplicate type %q", t.Name)
			}
			if _, dup := s.enums[t.Name]; dup {
				return errAt(t.Pos, "type %q has the name of an enum", t.Name)
			}
			s.types[t.Name] = t
			s.typeFile[t.Name] = owner
		}
		return nil
	}
	for _, f := range s.Encodings {
		if err := addTypes(f.Types, ""); err != nil {
			return err
		}
	}
	for _, c := range s.Commands {
		if err := addTypes(c.Types, c.Command); err != nil {
			return err
		}
	}
	for _, t := range sortedTypes(s.types) {
		if err := s.checkType(t); err != nil {
			return err
		}
	}

	// Generated command names must not collide with shared types or enums.
	for _, c := range s.Commands {
		for _, suffix := range []string{"Request", "Response"} {
			n := goName(c.Command) + suffix
			if t, ok := s.types[n]; ok {
				return errAt(t.Pos, "type %s collides with the generated body type of command %s", n, c.Command)
			}
			if e, ok := s.enums[n]; ok {
				return errAt(e.Pos, "enum %s collides with the generated body type of command %s", n, c.Command)
			}
		}
	}

	// Commands.
	seenCode := map[uint32]string{}
	seenName := map[string]bool{}
	for _, c := range s.Commands {
		if err := s.checkCommand(c, seenCode, seenName); err != nil {
			return err
		}
	}

	// Options.
	seenScope := map[string]bool{}
	for _, cat := range s.Options.Catalogs {
		if seenScope[cat.Scope] {
			return errAt(cat.Pos, "duplicate catalog %q", cat.Scope)
		}
		seenScope[cat.Scope] = true
		if !snakeRe.MatchString(cat.Scope) {
			return errAt(cat.Pos, "scope %q must be snake_case", cat.Scope)
		}
		seenKey := map[string]bool{}
		for _, o := range cat.Options {
			if err := s.checkOption(o); err != nil {
				return err
			}
			if seenKey[o.Key] {
				return errAt(o.Pos, "duplicate option %q", o.Key)
			}
			seenKey[o.Key] = true
		}
	}

	// Errors.
	seenE := map[uint32]string{}
	seenEN := map[string]bool{}
	for _, e := range s.Errors.Errors {
		if !camelRe.MatchString(e.Name) {
			return errAt(e.Pos, "error name %q must be CamelCase", e.Name)
		}
		if prev, dup := seenE[e.Code]; dup {
			return errAt(e.Pos, "error %q reuses code %d of %q", e.Name, e.Code, prev)
		}
		if seenEN[e.Name] {
			return errAt(e.Pos, "duplicate error name %q", e.Name)
		}
		if e.Code == 0 {
			return errAt(e.Pos, "error %q: code 0 means success", e.Name)
		}
		seenE[e.Code] = e.Name
		seenEN[e.Name] = true
		if err := s.checkVersions(e.Pos, e.Since, e.Until); err != nil {
			return err
		}
		if err := needDoc(e.Pos, "error "+e.Name, e.Doc); err != nil {
			return err
		}
		if e.Class != "" && errorClassIndex(e.Class) < 0 {
			names := make([]string, len(errorClasses))
			for i, c := range errorClasses {
				names[i] = c.Name
			}
			return errAt(e.Pos, "error %q: class %q is not one of %s", e.Name, e.Class, strings.Join(names, ", "))
		}
	}
	for _, c := range s.Commands {
		for _, r := range c.Errors {
			if _, ok := seenE[r.Code]; !ok && len(s.Errors.Errors) > 0 {
				return errAt(r.Pos, "command %s: error code %d is not in errors.yaml", c.Command, r.Code)
			}
			switch r.Channel {
			case "status", "result", "eviction", "silence", "sentinel", "empty":
			default:
				return errAt(r.Pos, "command %s: channel %q is not status, result, eviction, silence, sentinel or empty", c.Command, r.Channel)
			}
		}
	}
	for _, e := range s.enums {
		for _, v := range e.Values {
			if v.Status != nil && len(s.Errors.Errors) > 0 {
				if _, ok := seenE[uint32(*v.Status)]; !ok {
					return errAt(v.Pos, "enum %s value %s: status %d is not in errors.yaml", e.Name, v.Name, *v.Status)
				}
			}
		}
	}
	return nil
}

func sortedTypes(m map[string]*TypeDef) []*TypeDef {
	out := make([]*TypeDef, 0, len(m))
	for _, t := range m {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func (s *Schema) checkEnum(e *EnumDef) error {
	if !camelRe.MatchString(e.Name) {
		return errAt(e.Pos, "enum name %q must be CamelCase", e.Name)
	}
	switch e.Type {
	case "u8", "u16", "u32":
	default:
		return errAt(e.Pos, "enum %s: type must be u8, u16 or u32", e.Name)
	}
	if err := needDoc(e.Pos, "enum "+e.Name, e.Doc); err != nil {
		return err
	}
	if err := s.checkVersions(e.Pos, e.Since, e.Until); err != nil {
		return err
	}
	if len(e.Values) == 0 {
		return errAt(e.Pos, "enum %s has no values", e.Name)
	}
	max := int64(1)<<(8*scalarSizes[e.Type]) - 1
	names, vals := map[string]bool{}, map[int64]string{}
	for _, v := range e.Values {
		if !camelRe.MatchString(v.Name) {
			return errAt(v.Pos, "enum %s: value name %q must be CamelCase", e.Name, v.Name)
		}
		if names[v.Name] {
			return errAt(v.Pos, "enum %s: duplicate name %q", e.Name, v.Name)
		}
		if prev, dup := vals[v.Value]; dup {
			return errAt(v.Pos, "enum %s: %s reuses value %d of %s", e.Name, v.Name, v.Value, prev)
		}
		if v.Value < 0 || v.Value > max {
			return errAt(v.Pos, "enum %s: %s = %d does not fit %s", e.Name, v.Name, v.Value, e.Type)
		}
		names[v.Name], vals[v.Value] = true, v.Name
		if err := needDoc(v.Pos, "enum value "+e.Name+"."+v.Name, v.Doc); err != nil {
			return err
		}
		if err := s.checkVersions(v.Pos, v.Since, v.Until); err != nil {
			return err
		}
	}
	return nil
}

func (s *Schema) checkLayout(l *LayoutDef) error {
	if !camelRe.MatchString(l.Name) {
		return errAt(l.Pos, "layout name %q must be CamelCase", l.Name)
	}
	if err := needDoc(l.Pos, "layout "+l.Name, l.Doc); err != nil {
		return err
	}
	next := 0
	names := map[string]bool{}
	for _, f := range l.Fields {
		if !snakeRe.MatchString(f.Name) {
			return errAt(f.Pos, "layout %s: field name %q must be snake_case", l.Name, f.Name)
		}
		if names[f.Name] {
			return errAt(f.Pos, "layout %s: duplicate field %q", l.Name, f.Name)
		}
		names[f.Name] = true
		if err := needDoc(f.Pos, "layout field "+l.Name+"."+f.Name, f.Doc); err != nil {
			return err
		}
		size := f.Size
		if n, ok := scalarSizes[f.Type]; ok {
			if f.Size != 0 && f.Size != n {
				return errAt(f.Pos, "layout %s.%s: size %d contradicts type %s", l.Name, f.Name, f.Size, f.Type)
			}
			size = n
		} else if f.Type != "fixed" {
			return errAt(f.Pos, "layout %s.%s: type must be a fixed-width scalar or fixed", l.Name, f.Name)
		} else if f.Size <= 0 {
			return errAt(f.Pos, "layout %s.%s: fixed needs a positive size", l.Name, f.Name)
		}
		f.Size = size
		if f.Offset != next {
			return errAt(f.Pos, "layout %s.%s: offset %d, but the previous field ends at %d (layouts must cover every byte in order)", l.Name, f.Name, f.Offset, next)
		}
		if f.Enum != "" {
			if _, ok := s.enums[f.Enum]; !ok {
				return errAt(f.Pos, "layout %s.%s: unknown enum %q", l.Name, f.Name, f.Enum)
			}
		}
		if err := s.checkVersions(f.Pos, f.Since, f.Until); err != nil {
			return err
		}
		next += size
	}
	if l.Size != 0 && next != l.Size {
		return errAt(l.Pos, "layout %s: fields cover %d bytes, size says %d", l.Name, next, l.Size)
	}
	l.Size = next
	return nil
}

// fieldsOf returns the fields of t including the ones it extends.
func (s *Schema) fieldsOf(t *TypeDef) []*FieldDef {
	var out []*FieldDef
	if t.Extends != "" {
		if b, ok := s.types[t.Extends]; ok {
			out = append(out, s.fieldsOf(b)...)
		}
	}
	return append(out, t.Fields...)
}

func (s *Schema) checkType(t *TypeDef) error {
	if err := needDoc(t.Pos, "type "+t.Name, t.Doc); err != nil {
		return err
	}
	if err := s.checkVersions(t.Pos, t.Since, t.Until); err != nil {
		return err
	}
	if t.Extends != "" {
		b, ok := s.types[t.Extends]
		if !ok {
			return errAt(t.Pos, "type %s extends unknown type %q", t.Name, t.Extends)
		}
		for seen, x := map[string]bool{t.Name: true}, b; x != nil; x = s.types[x.Extends] {
			if seen[x.Name] {
				return errAt(t.Pos, "type %s: extends cycle", t.Name)
			}
			seen[x.Name] = true
			if x.Extends == "" {
				break
			}
		}
	}
	if err := s.checkFields(t.Name, t.Pos, s.fieldsOf(t), len(s.fieldsOf(t))-len(t.Fields)); err != nil {
		return err
	}
	if v := t.Variants; v != nil {
		var on *FieldDef
		for _, f := range s.fieldsOf(t) {
			if f.Name == v.On {
				on = f
			}
		}
		if on == nil || on.Enum == "" {
			return errAt(v.Pos, "type %s: variants.on must name an enum field", t.Name)
		}
		e := s.enums[on.Enum]
		for _, c := range v.Cases {
			found := false
			for _, ev := range e.Values {
				found = found || ev.Name == c.When
			}
			if !found {
				return errAt(c.Pos, "type %s: variant %q is not a value of %s", t.Name, c.When, e.Name)
			}
			var target *FieldDef
			for _, f := range s.fieldsOf(t) {
				if f.Name == c.Field {
					target = f
				}
			}
			if target == nil || !lenType(target.Type) {
				return errAt(c.Pos, "type %s: variant field %q must be a byte/text field of the type", t.Name, c.Field)
			}
		}
	}
	return nil
}

func lenType(t string) bool {
	switch t {
	case "name", "str8", "str32", "bytes8", "bytes32", "rest":
		return true
	}
	return false
}

// disjoint reports whether two fields of one name never exist in the same
// protocol (one ends where or before the other starts), so each shape has one.
func (s *Schema) disjoint(a, b *FieldDef) bool {
	for _, p := range s.protocols {
		if inProtocol(p, a.Since, a.Until) && inProtocol(p, b.Since, b.Until) {
			return false
		}
	}
	return true
}

// checkFields checks a field list; the first `inherited` fields come from an
// extended type and were checked with it.
func (s *Schema) checkFields(owner string, at Pos, fields []*FieldDef, inherited int) error {
	names := map[string]int{}
	for i, f := range fields {
		if j, dup := names[f.Name]; dup && !s.disjoint(fields[j], f) {
			return errAt(f.Pos, "%s: duplicate field %q", owner, f.Name)
		}
		names[f.Name] = i
		if i < inherited {
			continue
		}
		where := fmt.Sprintf("%s: field %q", owner, f.Name)
		if !snakeRe.MatchString(f.Name) {
			return errAt(f.Pos, "%s: field name must be snake_case", where)
		}
		if err := needDoc(f.Pos, where, f.Doc); err != nil {
			return err
		}
		if err := s.checkVersions(f.Pos, f.Since, f.Until); err != nil {
			return err
		}
		if err := s.checkFieldType(where, f, f.Type, true); err != nil {
			return err
		}
		last := true // no later field shares a protocol with f
		for _, g := range fields[i+1:] {
			if !s.disjoint(f, g) {
				last = false
			}
		}
		switch f.Type {
		case "rest", "batch", "batches":
			if !last {
				return errAt(f.Pos, "%s: %s must be the last field", where, f.Type)
			}
		case "options":
			switch f.Framing {
			case "rest":
				if !last {
					return errAt(f.Pos, "%s: options with framing rest must be the last field", where)
				}
			case "len32":
			default:
				return errAt(f.Pos, "%s: options need framing rest or len32", where)
			}
		case "list":
			if f.Count.Kind == "to_end" && !last {
				return errAt(f.Pos, "%s: a to_end list must be the last field", where)
			}
			if f.Count.Kind == "u8" && (!f.Len.Set || f.Len.Max == nil || *f.Len.Max > 255) {
				return errAt(f.Pos, "%s: a list with count u8 needs len with a max of at most 255", where)
			}
			if f.Count.Kind == "field" {
				j, ok := names[f.Count.Field]
				if !ok || j >= i {
					return errAt(f.Pos, "%s: count field %q must be an earlier field", where, f.Count.Field)
				}
				if !integerTypes[fields[j].Type] {
					return errAt(f.Pos, "%s: count field %q is not an integer", where, f.Count.Field)
				}
			}
		}
		if f.Framing != "" && f.Type != "options" {
			return errAt(f.Pos, "%s: framing only applies to options", where)
		}
		if len(f.LengthOf) > 0 {
			if f.Type != "u32" && f.Type != "u8" && f.Type != "u16" {
				return errAt(f.Pos, "%s: length_of needs an unsigned integer field", where)
			}
			for k, name := range f.LengthOf {
				if i+1+k >= len(fields) || fields[i+1+k].Name != name {
					return errAt(f.Pos, "%s: length_of must list the fields that directly follow, in order (expected %q at position %d)", where, name, k+1)
				}
			}
		}
		if f.Enum != "" {
			e, ok := s.enums[f.Enum]
			if !ok {
				return errAt(f.Pos, "%s: unknown enum %q", where, f.Enum)
			}
			elem := f.Type
			if f.Type == "list" || f.Type == "optional" {
				elem = f.Of // the enum applies to each element
			}
			if e.Type != elem {
				return errAt(f.Pos, "%s: enum %s is %s but the field (element) is %s", where, e.Name, e.Type, elem)
			}
		}
		if f.AbsentSize != 0 && (f.Type != "optional" || f.AbsentSize < 1) {
			return errAt(f.Pos, "%s: absent_size applies to optional fields and must be >= 1", where)
		}
		if f.Range.Set && !integerTypes[f.Type] {
			return errAt(f.Pos, "%s: range applies to integer fields", where)
		}
		if f.Len.Set && !lenType(f.Type) && f.Type != "list" {
			return errAt(f.Pos, "%s: len applies to text, byte and list fields", where)
		}
		if f.Const != nil && !integerTypes[f.Type] {
			return errAt(f.Pos, "%s: const applies to integer fields", where)
		}
		if f.Size != 0 && f.Type != "fixed" {
			return errAt(f.Pos, "%s: size applies to fixed fields", where)
		}
		if f.Type == "fixed" && f.Size <= 0 {
			return errAt(f.Pos, "%s: fixed needs a positive size", where)
		}
		if f.Type == "name" || f.Type == "str8" || f.Type == "bytes8" {
			if f.Len.Set && f.Len.Max != nil && *f.Len.Max > 255 {
				return errAt(f.Pos, "%s: len max %d does not fit a u8 length prefix", where, *f.Len.Max)
			}
		}
	}
	return nil
}

func (s *Schema) checkFieldType(where string, f *FieldDef, typ string, top bool) error {
	if _, ok := scalarSizes[typ]; ok {
		return nil
	}
	switch typ {
	case "list", "optional":
		if !top {
			return errAt(f.Pos, "%s: nested %s is not supported", where, typ)
		}
		if f.Of == "" {
			return errAt(f.Pos, "%s: %s needs of:", where, typ)
		}
		if typ == "list" && f.Count.Kind == "" {
			return errAt(f.Pos, "%s: list needs count:", where)
		}
		if typ == "optional" && f.Count.Kind != "" {
			return errAt(f.Pos, "%s: optional takes no count:", where)
		}
		switch f.Of {
		case "name", "str8", "str32", "bytes8", "bytes32":
			return nil
		}
		if _, ok := scalarSizes[f.Of]; ok {
			return nil
		}
		if _, ok := s.types[f.Of]; !ok {
			return errAt(f.Pos, "%s: unknown element type %q", where, f.Of)
		}
		return nil
	}
	if f.Of != "" || (f.Count.Kind != "" && typ != "list") {
		return errAt(f.Pos, "%s: of/count only apply to list and optional", where)
	}
	if builtinTypes[typ] {
		return nil
	}
	if t, ok := s.types[typ]; ok {
		if s.versioned(t) {
			return errAt(f.Pos, "%s: type %s has protocol-dependent fields and cannot be nested (not supported yet)", where, typ)
		}
		return nil
	}
	return errAt(f.Pos, "%s: unknown type %q", where, typ)
}

// versioned reports whether a type's shape depends on the protocol.
func (s *Schema) versioned(t *TypeDef) bool {
	for _, f := range s.fieldsOf(t) {
		if f.Since != "" || f.Until != "" {
			return true
		}
	}
	return false
}

func (s *Schema) checkCommand(c *CommandFile, seenCode map[uint32]string, seenName map[string]bool) error {
	if !snakeRe.MatchString(c.Command) {
		return errAt(c.Pos, "command name %q must be snake_case", c.Command)
	}
	if seenName[c.Command] {
		return errAt(c.Pos, "duplicate command %q", c.Command)
	}
	seenName[c.Command] = true
	if prev, dup := seenCode[c.Code]; dup {
		return errAt(c.Pos, "command %s reuses code %d of %s", c.Command, c.Code, prev)
	}
	seenCode[c.Code] = c.Command
	block, ok := domainCodes[c.Domain]
	if !ok {
		return errAt(c.Pos, "command %s: unknown domain directory %q", c.Command, c.Domain)
	}
	if c.Code < block[0] || c.Code > block[1] {
		return errAt(c.Pos, "command %s: code %d is outside the %s block %d..%d", c.Command, c.Code, c.Domain, block[0], block[1])
	}
	if !dotRe.MatchString(c.WireName) {
		return errAt(c.Pos, "command %s: wire_name %q must be dotted snake_case (e.g. topic.create)", c.Command, c.WireName)
	}
	if c.Operation != "" {
		if _, ok := s.ops[c.Operation]; !ok {
			return errAt(c.Pos, "command %s: unknown operation %q", c.Command, c.Operation)
		}
	} else if !c.Legacy {
		return errAt(c.Pos, "command %s: operation is required (or legacy: true)", c.Command)
	}
	switch c.Auth {
	case "none", "login", "permission":
	default:
		return errAt(c.Pos, "command %s: auth must be none, login or permission", c.Command)
	}
	switch c.Reply.EmptyMeans {
	case "", "none":
	default:
		return errAt(c.Pos, "command %s: reply.empty_means must be none or absent", c.Command)
	}
	if err := needDoc(c.Pos, "command "+c.Command, c.Doc); err != nil {
		return err
	}
	if err := s.checkVersions(c.Pos, c.Since, c.Until); err != nil {
		return err
	}
	for _, b := range []*BodyDef{c.Request, c.Response} {
		if b == nil {
			continue
		}
		if b.Type != "" {
			if len(b.Fields) > 0 {
				return errAt(b.Pos, "command %s: a body has either type or fields", c.Command)
			}
			if _, ok := s.types[b.Type]; !ok {
				return errAt(b.Pos, "command %s: unknown body type %q", c.Command, b.Type)
			}
			continue
		}
		if err := s.checkFields("command "+c.Command, b.Pos, b.Fields, 0); err != nil {
			return err
		}
	}
	return nil
}

var optionKinds = map[string]bool{"String": true, "Uint8": true, "Uint32": true, "Uint64": true, "Bool": true}

func (s *Schema) checkOption(o *OptionDef) error {
	if !snakeRe.MatchString(o.Key) {
		return errAt(o.Pos, "option key %q must be snake_case", o.Key)
	}
	if !optionKinds[o.Kind] {
		return errAt(o.Pos, "option %s: kind %q is not one of String, Uint8, Uint32, Uint64, Bool", o.Key, o.Kind)
	}
	for _, k := range o.Also {
		if !optionKinds[k] {
			return errAt(o.Pos, "option %s: also-kind %q is not supported", o.Key, k)
		}
	}
	switch o.Parse {
	case "compression", "duration", "byte_size", "bool", "decimal":
		if len(o.Choices) > 0 {
			return errAt(o.Pos, "option %s: choices apply to parse: choice", o.Key)
		}
	case "choice":
		if len(o.Choices) == 0 || o.Kind != "String" {
			return errAt(o.Pos, "option %s: parse: choice needs kind String and a choices list", o.Key)
		}
	default:
		return errAt(o.Pos, "option %s: parse must be compression, duration, byte_size, bool, decimal or choice", o.Key)
	}
	if !o.Default.Set {
		return errAt(o.Pos, "option %s: default is required", o.Key)
	}
	if _, err := encodeOptionValue(o.Kind, o.Default.Text); err != nil {
		return errAt(o.Pos, "option %s: default: %v", o.Key, err)
	}
	if err := needDoc(o.Pos, "option "+o.Key, o.Doc); err != nil {
		return err
	}
	if strings.TrimSpace(o.Description) == "" {
		return errAt(o.Pos, "option %s: description is required (DESCRIBE_OPTIONS returns it)", o.Key)
	}
	return s.checkVersions(o.Pos, o.Since, o.Until)
}

// encodeOptionValue encodes a catalog default in its canonical kind.
func encodeOptionValue(kind, text string) ([]byte, error) {
	switch kind {
	case "String":
		if text == "" || len(text) > 255 {
			return nil, fmt.Errorf("string default must be 1..255 bytes")
		}
		return []byte(text), nil
	case "Bool":
		switch text {
		case "true":
			return []byte{1}, nil
		case "false":
			return []byte{0}, nil
		}
		return nil, fmt.Errorf("bool default must be true or false")
	case "Uint8", "Uint32", "Uint64":
		bits := map[string]int{"Uint8": 8, "Uint32": 32, "Uint64": 64}[kind]
		v, err := strconv.ParseUint(text, 0, bits)
		if err != nil {
			return nil, fmt.Errorf("%q is not a %s", text, kind)
		}
		out := make([]byte, bits/8)
		for i := range out {
			out[i] = byte(v >> (8 * i))
		}
		return out, nil
	}
	return nil, fmt.Errorf("unsupported kind %s", kind)
}
