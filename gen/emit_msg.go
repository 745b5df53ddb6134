package main

import (
	"fmt"
	"strconv"
	"strings"
)

// msg is one generated message struct: a shared type, or one shape of a
// command's request or response body.
type msg struct {
	GoName   string
	Wire     string // name used in decode errors, e.g. create_topic.request
	Doc      string
	Extends  string // Go name of an embedded base type
	Base     *TypeDef
	Fields   []*FieldDef // own fields (excluding the base's)
	All      []*FieldDef // base fields + own fields (for count references)
	Variants *VariantsDef
}

func (s *Schema) emitType(b *buf, t *TypeDef) error {
	if s.versioned(t) {
		return errAt(t.Pos, "type %s: protocol-dependent fields are only supported in command bodies", t.Name)
	}
	m := &msg{GoName: t.Name, Wire: snake(t.Name), Doc: t.Doc, Fields: t.Fields, All: s.fieldsOf(t), Variants: t.Variants}
	if t.Extends != "" {
		m.Extends, m.Base = t.Extends, s.types[t.Extends]
	}
	if t.Since != "" || t.Until != "" {
		m.Doc += versionNote(t.Since, t.Until)
	}
	return s.emitMsg(b, m)
}

// shape is the field list of a body in a set of protocols.
type shape struct {
	Suffix string
	Protos []*ProtocolDef
	Fields []*FieldDef
}

// shapes groups the protocols in which a command exists by the fields its body has.
func (s *Schema) shapes(c *CommandFile, fields []*FieldDef) []shape {
	var out []shape
	for _, p := range s.protocols {
		if !inProtocol(p, c.Since, c.Until) {
			continue
		}
		var fs []*FieldDef
		for _, f := range fields {
			if inProtocol(p, f.Since, f.Until) {
				fs = append(fs, f)
			}
		}
		if n := len(out); n > 0 && sameFields(out[n-1].Fields, fs) {
			out[n-1].Protos = append(out[n-1].Protos, p)
			continue
		}
		suffix := ""
		if len(out) > 0 {
			m := verRe.FindStringSubmatch(p.Version)
			suffix = "V" + m[2]
			if m[1] != "0" {
				suffix = "V" + m[1] + "_" + m[2]
			}
		}
		out = append(out, shape{Suffix: suffix, Protos: []*ProtocolDef{p}, Fields: fs})
	}
	return out
}

func sameFields(a, b []*FieldDef) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func protoList(ps []*ProtocolDef) string {
	var v []string
	for _, p := range ps {
		v = append(v, p.Version)
	}
	return strings.Join(v, ", ")
}

func (s *Schema) emitCommand(c *CommandFile) (string, error) {
	var b buf
	base := goName(c.Command)
	codeID := "Code" + base
	d := fmt.Sprintf("%s is the command code of %s (%s). %s", codeID, strings.ToUpper(c.Command), c.WireName, c.Doc)
	d += versionNote(c.Since, c.Until)
	b.WriteString(comment(d, ""))
	b.p("const %s uint32 = %d", codeID, c.Code)
	b.p("")
	for _, e := range c.Enums {
		s.emitEnum(&b, e)
	}
	for _, t := range c.Types {
		if err := s.emitType(&b, t); err != nil {
			return "", err
		}
	}
	op := "Operation(0)"
	if c.Operation != "" {
		op = "Operation" + c.Operation
	}
	for _, part := range []struct {
		body *BodyDef
		kind string
	}{{c.Request, "Request"}, {c.Response, "Response"}} {
		if part.body == nil {
			continue
		}
		if part.body.Type != "" {
			name := base + part.kind
			b.p("// %s is the %s body of %s: a %s.", name, strings.ToLower(part.kind), strings.ToUpper(c.Command), part.body.Type)
			if part.body.Doc != "" {
				b.WriteString(comment(part.body.Doc, ""))
			}
			b.p("type %s = %s", name, part.body.Type)
			b.p("")
			continue
		}
		shapes := s.shapes(c, part.body.Fields)
		for _, sh := range shapes {
			name := base + part.kind + sh.Suffix
			doc := fmt.Sprintf("%s is the %s body of %s", name, strings.ToLower(part.kind), strings.ToUpper(c.Command))
			if len(shapes) > 1 {
				doc += fmt.Sprintf(" in protocol %s", protoList(sh.Protos))
			}
			doc += "."
			if part.body.Doc != "" {
				doc += "\n" + part.body.Doc
			}
			m := &msg{GoName: name, Wire: c.Command + "." + strings.ToLower(part.kind), Doc: doc, Fields: sh.Fields, All: sh.Fields}
			if err := s.emitMsg(&b, m); err != nil {
				return "", err
			}
			if part.kind == "Request" {
				b.p("// Code returns %s.", codeID)
				b.p("func (*%s) Code() uint32 { return %s }", name, codeID)
				b.p("")
				b.p("// Operation returns the operation byte the request travels with.")
				b.p("func (*%s) Operation() Operation { return %s }", name, op)
				b.p("")
			}
		}
	}
	return b.String(), nil
}

// emitMsg writes the struct and its codec methods.
func (s *Schema) emitMsg(b *buf, m *msg) error {
	b.WriteString(comment(docFor(m.GoName, m.Doc), ""))
	b.p("//")
	b.p("// Byte-slice fields filled by DecodeFrom alias the decoded input.")
	b.p("type %s struct {", m.GoName)
	if m.Extends != "" {
		b.p("\t%s", m.Extends)
	}
	for _, f := range m.Fields {
		if len(f.LengthOf) > 0 {
			continue // derived
		}
		d := f.Doc
		if f.Unit != "" {
			d += " Unit: " + f.Unit + "."
		}
		d += versionNote(f.Since, f.Until)
		b.WriteString(comment(d, "\t"))
		b.p("\t%s %s", goName(f.Name), s.goType(f))
	}
	b.p("}")
	b.p("")

	// EncodedSize
	b.p("// EncodedSize returns the number of bytes AppendTo writes.")
	b.p("func (m *%s) EncodedSize() int {", m.GoName)
	b.p("\tn := 0")
	if m.Extends != "" {
		b.p("\tn += m.%s.EncodedSize()", m.Extends)
	}
	for _, f := range m.Fields {
		b.WriteString(s.sizeStmts(f, "m."+goName(f.Name), "n", m.Fields))
	}
	b.p("\treturn n")
	b.p("}")
	b.p("")

	// AppendTo
	b.p("// AppendTo appends the wire encoding of m to dst. It does not validate: call Validate first for values not built by DecodeFrom.")
	b.p("func (m *%s) AppendTo(dst []byte) []byte {", m.GoName)
	if m.Extends != "" {
		b.p("\tdst = m.%s.AppendTo(dst)", m.Extends)
	}
	for _, f := range m.Fields {
		b.WriteString(s.encodeStmts(f, "m."+goName(f.Name), m.Fields))
	}
	b.p("\treturn dst")
	b.p("}")
	b.p("")
	if n := len(m.Fields); n > 0 && m.Fields[n-1].Type == "batch" {
		b.p("// AppendHeadTo appends every field but the trailing batch, so a caller can build the batch record directly after it in the same buffer.")
		b.p("func (m *%s) AppendHeadTo(dst []byte) []byte {", m.GoName)
		for _, f := range m.Fields[:n-1] {
			b.WriteString(s.encodeStmts(f, "m."+goName(f.Name), m.Fields))
		}
		b.p("\treturn dst")
		b.p("}")
		b.p("")
	}

	// DecodeFrom
	b.p("// DecodeFrom decodes m from the start of src and returns the bytes consumed. Errors are *wire.DecodeError values naming the field and offset.")
	b.p("func (m *%s) DecodeFrom(src []byte) (int, error) {", m.GoName)
	b.p("\tr := wire.NewReader(src, %q)", m.Wire)
	b.p("\tm.decode(&r, \"\")")
	b.p("\treturn r.Off(), r.Err()")
	b.p("}")
	b.p("")
	b.p("func (m *%s) decode(r *wire.Reader, path string) {", m.GoName)
	if m.Variants != nil {
		b.p("\tstart := r.Off()")
	}
	if m.Extends != "" {
		b.p("\tm.%s.decode(r, path)", m.Extends)
	}
	var lenOf *FieldDef
	lenLeft := 0
	for _, f := range m.Fields {
		x := "m." + goName(f.Name)
		if len(f.LengthOf) > 0 {
			lv := "len" + goName(f.Name)
			b.p("\to%s := r.Off()", goName(f.Name))
			b.p("\t%s := int(r.%s(path, %q))", lv, readFn(f.Type), f.Name)
			b.p("\tif %s > r.Remaining() {", lv)
			b.p("\t\tr.Fail(path, %q, o%s, wire.ErrShortBuffer, \"declared length exceeds the input\")", f.Name, goName(f.Name))
			b.p("\t}")
			b.p("\tstart%s := r.Off()", goName(f.Name))
			lenOf, lenLeft = f, len(f.LengthOf)
			continue
		}
		b.WriteString(s.decodeStmts(f, x, m))
		if lenOf != nil {
			lenLeft--
			if lenLeft == 0 {
				g := goName(lenOf.Name)
				b.p("\tif !r.Failed() && r.Off()-start%s != len%s {", g, g)
				b.p("\t\tr.Fail(path, %q, o%s, wire.ErrConstraint, \"declared \"+strconv.Itoa(len%s)+\" bytes, fields took \"+strconv.Itoa(r.Off()-start%s))", lenOf.Name, g, g, g)
				b.p("\t}")
				lenOf = nil
			}
		}
	}
	if m.Variants != nil {
		b.p("\tif !r.Failed() {")
		b.p("\t\tif field, detail, err := m.checkVariant(); err != nil {")
		b.p("\t\t\tr.Fail(path, field, start, err, detail)")
		b.p("\t\t}")
		b.p("\t}")
	}
	b.p("}")
	b.p("")

	if m.Variants != nil {
		s.emitVariantCheck(b, m)
	}

	// Validate
	b.p("// Validate checks every constraint the schema states for m.")
	b.p("func (m *%s) Validate() error { return m.validate(%q, \"\") }", m.GoName, m.Wire)
	b.p("")
	b.p("func (m *%s) validate(msg, path string) error {", m.GoName)
	if m.Extends != "" {
		b.p("\tif err := m.%s.validate(msg, path); err != nil {", m.Extends)
		b.p("\t\treturn err")
		b.p("\t}")
	}
	for _, f := range m.Fields {
		b.WriteString(s.validateStmts(f, "m."+goName(f.Name), m.Fields))
	}
	if m.Variants != nil {
		b.p("\tif field, detail, err := m.checkVariant(); err != nil {")
		b.p("\t\treturn invalid(msg, path, field, err, detail)")
		b.p("\t}")
	}
	b.p("\treturn nil")
	b.p("}")
	b.p("")
	return nil
}

func (s *Schema) emitVariantCheck(b *buf, m *msg) {
	v := m.Variants
	var on *FieldDef
	for _, f := range m.All {
		if f.Name == v.On {
			on = f
		}
	}
	b.p("// checkVariant applies the per-%s rules.", v.On)
	b.p("func (m *%s) checkVariant() (field, detail string, err error) {", m.GoName)
	b.p("\tswitch m.%s {", goName(v.On))
	for _, c := range v.Cases {
		var target *FieldDef
		for _, f := range m.All {
			if f.Name == c.Field {
				target = f
			}
		}
		x := "m." + goName(c.Field)
		b.p("\tcase %s%s:", on.Enum, goName(c.When))
		if c.Len.Set {
			cond, detail := lenCond(x, c.Len)
			if cond != "" {
				b.p("\t\tif %s {", cond)
				b.p("\t\t\treturn %q, %q, wire.ErrConstraint", c.Field, c.When+": "+detail)
				b.p("\t\t}")
			}
		}
		if c.UTF8 {
			fn := "utf8.Valid"
			if goStringType(target.Type) {
				fn = "utf8.ValidString"
			}
			b.p("\t\tif !%s(%s) {", fn, x)
			b.p("\t\t\treturn %q, %q, wire.ErrInvalidUTF8", c.Field, c.When)
			b.p("\t\t}")
		}
	}
	b.p("\t}")
	b.p("\treturn \"\", \"\", nil")
	b.p("}")
	b.p("")
}

func goStringType(t string) bool { return t == "name" || t == "str8" || t == "str32" }

func (s *Schema) goType(f *FieldDef) string {
	return s.goTypeOf(f.Type, f)
}

func (s *Schema) goTypeOf(t string, f *FieldDef) string {
	if f != nil && f.Enum != "" {
		switch t {
		case "list":
			return "[]" + f.Enum
		case "optional":
			return "*" + f.Enum
		}
		return f.Enum
	}
	if g := goScalar(t); g != "" {
		return g
	}
	switch t {
	case "name", "str8", "str32":
		return "string"
	case "bytes8", "bytes32", "rest", "batch", "batches":
		return "[]byte"
	case "fixed":
		return fmt.Sprintf("[%d]byte", f.Size)
	case "options":
		return "Options"
	case "list":
		return "[]" + s.goTypeOf(f.Of, nil)
	case "optional":
		return "*" + s.goTypeOf(f.Of, nil)
	}
	return t
}

func readFn(t string) string {
	switch t {
	case "u8":
		return "U8"
	case "u16":
		return "U16LE"
	case "u32":
		return "U32LE"
	case "u64":
		return "U64LE"
	case "u128":
		return "U128LE"
	case "i8":
		return "I8"
	case "i16":
		return "I16LE"
	case "i32":
		return "I32LE"
	case "i64":
		return "I64LE"
	case "f32":
		return "F32LE"
	case "f64":
		return "F64LE"
	case "bool":
		return "Bool"
	case "flag":
		return "Flag"
	}
	return ""
}

func appendFn(t string) string {
	switch t {
	case "u8":
		return "wire.AppendU8"
	case "u16":
		return "wire.AppendU16LE"
	case "u32":
		return "wire.AppendU32LE"
	case "u64":
		return "wire.AppendU64LE"
	case "u128":
		return "wire.AppendU128LE"
	case "i8":
		return "wire.AppendI8"
	case "i16":
		return "wire.AppendI16LE"
	case "i32":
		return "wire.AppendI32LE"
	case "i64":
		return "wire.AppendI64LE"
	case "f32":
		return "wire.AppendF32LE"
	case "f64":
		return "wire.AppendF64LE"
	case "bool", "flag":
		return "wire.AppendBool"
	}
	return ""
}

// elemSize returns an expression for the encoded size of one element.
func (s *Schema) elemSize(of, x string) string {
	if n, ok := scalarSizes[of]; ok {
		return strconv.Itoa(n)
	}
	switch of {
	case "name", "str8", "bytes8":
		return "1 + len(" + x + ")"
	case "str32", "bytes32":
		return "4 + len(" + x + ")"
	}
	return x + ".EncodedSize()"
}

// minSize is the smallest encoding of a type (used to bound counts read from
// the wire before allocating).
func (s *Schema) minSize(of string) int {
	if n, ok := scalarSizes[of]; ok {
		return n
	}
	switch of {
	case "name":
		return 2
	case "str8", "bytes8":
		return 1
	case "str32", "bytes32":
		return 4
	}
	t, ok := s.types[of]
	if !ok {
		return 1
	}
	n := 0
	for _, f := range s.fieldsOf(t) {
		switch f.Type {
		case "list":
			if f.Count.Kind == "u32" {
				n += 4
			} else if f.Count.Kind == "chain" || f.Count.Kind == "u8" {
				n++
			}
		case "optional":
			n++
		case "fixed":
			n += f.Size
		case "options":
			if f.Framing == "len32" {
				n += 4
			}
		case "rest", "batch", "batches":
		default:
			n += s.minSize(f.Type)
		}
	}
	if n == 0 {
		n = 1
	}
	return n
}

func (s *Schema) sizeStmts(f *FieldDef, x, n string, siblings []*FieldDef) string {
	var b buf
	if len(f.LengthOf) > 0 {
		b.p("\t%s += %d", n, scalarSizes[f.Type])
		return b.String()
	}
	if sz, ok := scalarSizes[f.Type]; ok {
		b.p("\t%s += %d", n, sz)
		return b.String()
	}
	switch f.Type {
	case "name", "str8", "bytes8":
		b.p("\t%s += 1 + len(%s)", n, x)
	case "str32", "bytes32":
		b.p("\t%s += 4 + len(%s)", n, x)
	case "fixed":
		b.p("\t%s += %d", n, f.Size)
	case "rest", "batch", "batches":
		b.p("\t%s += len(%s)", n, x)
	case "options":
		if f.Framing == "len32" {
			b.p("\t%s += 4", n)
		}
		b.p("\t%s += %s.EncodedSize()", n, x)
	case "list":
		switch f.Count.Kind {
		case "u32":
			b.p("\t%s += 4", n)
		case "u8":
			b.p("\t%s++", n)
		case "chain":
			b.p("\t%s += 1 + len(%s)", n, x)
		}
		if sz, ok := scalarSizes[f.Of]; ok {
			b.p("\t%s += %d * len(%s)", n, sz, x)
		} else {
			b.p("\tfor i := range %s {", x)
			b.p("\t\t%s += %s", n, s.elemSize(f.Of, x+"[i]"))
			b.p("\t}")
		}
	case "optional":
		ex := x
		if _, isType := s.types[f.Of]; !isType {
			ex = "*" + x
		}
		if f.AbsentSize > 1 {
			b.p("\tif %s == nil {", x)
			b.p("\t\t%s += %d", n, f.AbsentSize)
			b.p("\t} else {")
			b.p("\t\t%s += 1 + %s", n, s.elemSize(f.Of, ex))
			b.p("\t}")
		} else {
			b.p("\t%s++", n)
			b.p("\tif %s != nil {", x)
			b.p("\t\t%s += %s", n, s.elemSize(f.Of, ex))
			b.p("\t}")
		}
	default:
		b.p("\t%s += %s.EncodedSize()", n, x)
	}
	return b.String()
}

// elemEncode returns statements appending one element held in x.
func (s *Schema) elemEncode(of, x, ind string) string {
	if fn := appendFn(of); fn != "" {
		return fmt.Sprintf("%sdst = %s(dst, %s(%s))\n", ind, fn, goScalar(of), x)
	}
	switch of {
	case "name", "str8", "bytes8":
		return fmt.Sprintf("%sdst = append(dst, uint8(len(%s)))\n%sdst = append(dst, %s...)\n", ind, x, ind, x)
	case "str32", "bytes32":
		return fmt.Sprintf("%sdst = wire.AppendU32LE(dst, uint32(len(%s)))\n%sdst = append(dst, %s...)\n", ind, x, ind, x)
	}
	return fmt.Sprintf("%sdst = %s.AppendTo(dst)\n", ind, x)
}

func (s *Schema) encodeStmts(f *FieldDef, x string, siblings []*FieldDef) string {
	var b buf
	if len(f.LengthOf) > 0 {
		lv := "len" + goName(f.Name)
		b.p("\t%s := 0", lv)
		for _, name := range f.LengthOf {
			for _, g := range siblings {
				if g.Name == name {
					b.WriteString(s.sizeStmts(g, "m."+goName(g.Name), lv, siblings))
				}
			}
		}
		b.p("\tdst = %s(dst, %s(%s))", appendFn(f.Type), goScalar(f.Type), lv)
		return b.String()
	}
	if fn := appendFn(f.Type); fn != "" {
		if f.Enum != "" {
			b.p("\tdst = %s(dst, %s(%s))", fn, goScalar(f.Type), x)
		} else {
			b.p("\tdst = %s(dst, %s)", fn, x)
		}
		return b.String()
	}
	switch f.Type {
	case "name", "str8", "bytes8", "str32", "bytes32":
		b.WriteString(s.elemEncode(f.Type, x, "\t"))
	case "fixed":
		b.p("\tdst = append(dst, %s[:]...)", x)
	case "rest", "batch", "batches":
		b.p("\tdst = append(dst, %s...)", x)
	case "options":
		if f.Framing == "len32" {
			b.p("\tdst = wire.AppendU32LE(dst, uint32(%s.EncodedSize()))", x)
		}
		b.p("\tdst = %s.AppendTo(dst)", x)
	case "list":
		if f.Count.Kind == "u32" {
			b.p("\tdst = wire.AppendU32LE(dst, uint32(len(%s)))", x)
		}
		if f.Count.Kind == "u8" {
			b.p("\tdst = append(dst, uint8(len(%s)))", x)
		}
		b.p("\tfor i := range %s {", x)
		if f.Count.Kind == "chain" {
			b.p("\t\tdst = append(dst, 1)")
		}
		b.WriteString(s.elemEncode(f.Of, x+"[i]", "\t\t"))
		b.p("\t}")
		if f.Count.Kind == "chain" {
			b.p("\tdst = append(dst, 0)")
		}
	case "optional":
		b.p("\tif %s == nil {", x)
		if f.AbsentSize > 1 {
			b.p("\t\tdst = append(dst, make([]byte, %d)...)", f.AbsentSize)
		} else {
			b.p("\t\tdst = append(dst, 0)")
		}
		b.p("\t} else {")
		b.p("\t\tdst = append(dst, 1)")
		ex := x
		if _, isType := s.types[f.Of]; !isType {
			ex = "*" + x
		}
		b.WriteString(s.elemEncode(f.Of, ex, "\t\t"))
		b.p("\t}")
	default:
		b.p("\tdst = %s.AppendTo(dst)", x)
	}
	return b.String()
}

// elemDecodeEnum decodes one scalar element of an enum type and checks it.
func (s *Schema) elemDecodeEnum(enum, of, x, pathExpr, field, ind string) string {
	if enum == "" {
		return s.elemDecode(of, x, pathExpr, field, ind)
	}
	return fmt.Sprintf("%seo := r.Off()\n%s%s = %s(r.%s(%s, %q))\n%sif !r.Failed() && !(%s).Valid() {\n%s\tr.Fail(%s, %q, eo, wire.ErrUnknownDiscriminant, \"value \"+strconv.FormatUint(uint64(%s), 10))\n%s}\n",
		ind, ind, x, enum, readFn(of), pathExpr, field, ind, x, ind, pathExpr, field, x, ind)
}

// elemDecode returns statements decoding one element into x (an lvalue).
func (s *Schema) elemDecode(of, x, pathExpr, field, ind string) string {
	if fn := readFn(of); fn != "" {
		return fmt.Sprintf("%s%s = r.%s(%s, %q)\n", ind, x, fn, pathExpr, field)
	}
	switch of {
	case "name", "str8":
		return fmt.Sprintf("%s%s = r.UTF8(%s, %q, int(r.U8(%s, %q)))\n", ind, x, pathExpr, field, pathExpr, field)
	case "str32":
		return fmt.Sprintf("%s%s = r.UTF8(%s, %q, int(r.U32LE(%s, %q)))\n", ind, x, pathExpr, field, pathExpr, field)
	case "bytes8":
		return fmt.Sprintf("%s%s = r.Bytes(%s, %q, int(r.U8(%s, %q)))\n", ind, x, pathExpr, field, pathExpr, field)
	case "bytes32":
		return fmt.Sprintf("%s%s = r.Bytes(%s, %q, int(r.U32LE(%s, %q)))\n", ind, x, pathExpr, field, pathExpr, field)
	}
	return fmt.Sprintf("%s%s.decode(r, wire.Join(%s, %q))\n", ind, x, pathExpr, field)
}

func (s *Schema) decodeStmts(f *FieldDef, x string, m *msg) string {
	var b buf
	conds := s.conds(f, x)
	needO := len(conds) > 0 || f.Type == "options" || f.Type == "batch" || f.Type == "batches" || f.Type == "list" || f.Type == "optional"
	if needO {
		b.p("\t{")
		b.p("\to := r.Off()")
	}
	if fn := readFn(f.Type); fn != "" {
		if f.Enum != "" {
			b.p("\t%s = %s(r.%s(path, %q))", x, f.Enum, fn, f.Name)
		} else {
			b.p("\t%s = r.%s(path, %q)", x, fn, f.Name)
		}
	} else {
		switch f.Type {
		case "name", "str8", "str32", "bytes8", "bytes32":
			b.WriteString(s.elemDecode(f.Type, x, "path", f.Name, "\t"))
		case "fixed":
			b.p("\tcopy(%s[:], r.Bytes(path, %q, %d))", x, f.Name, f.Size)
		case "rest":
			b.p("\t%s = r.Rest(path, %q)", x, f.Name)
		case "batches":
			b.p("\t%s = r.Rest(path, %q)", x, f.Name)
			b.p("\tif !r.Failed() {")
			b.p("\t\tif err := CheckBatches(%s); err != nil {", x)
			b.p("\t\t\tr.Fail(path, %q, o, err, \"\")", f.Name)
			b.p("\t\t}")
			b.p("\t}")
		case "batch":
			b.p("\t%s = r.Rest(path, %q)", x, f.Name)
			b.p("\tif !r.Failed() {")
			b.p("\t\tif err := CheckBatch(%s); err != nil {", x)
			b.p("\t\t\tr.Fail(path, %q, o, err, \"\")", f.Name)
			for _, g := range m.All {
				if g.Name == "messages_count" {
					b.p("\t\t} else if c := BatchMessageCount(%s); c != m.MessagesCount {", x)
					b.p("\t\t\tr.Fail(path, %q, o, wire.ErrConstraint, \"batch holds \"+strconv.FormatUint(uint64(c), 10)+\" messages, messages_count says \"+strconv.FormatUint(uint64(m.MessagesCount), 10))", f.Name)
				}
			}
			b.p("\t\t}")
			b.p("\t}")
		case "options":
			if f.Framing == "len32" {
				b.p("\tblk := r.Bytes(path, %q, int(r.U32LE(path, %q)))", f.Name, f.Name)
			} else {
				b.p("\tblk := r.Rest(path, %q)", f.Name)
			}
			b.p("\tif !r.Failed() {")
			b.p("\t\topts, err := ParseOptions(blk)")
			b.p("\t\tif err != nil {")
			b.p("\t\t\tr.Fail(path, %q, o, err, \"\")", f.Name)
			b.p("\t\t}")
			b.p("\t\t%s = opts", x)
			b.p("\t}")
		case "list":
			s.decodeList(&b, f, x)
		case "optional":
			elem := s.goTypeOf(f.Of, nil)
			if f.Enum != "" {
				elem = f.Enum
			}
			b.p("\tif flag := r.U8(path, %q); flag == 1 {", f.Name)
			b.p("\t\t%s = new(%s)", x, elem)
			ex := x
			if _, isType := s.types[f.Of]; !isType {
				ex = "*" + x
			}
			b.WriteString(s.elemDecodeEnum(f.Enum, f.Of, ex, "path", f.Name, "\t\t"))
			if f.AbsentSize > 1 {
				b.p("\t} else if pad := r.Bytes(path, %q, %d); !r.Failed() && (flag != 0 || !allZero(pad)) {", f.Name, f.AbsentSize-1)
				b.p("\t\tr.Fail(path, %q, o, wire.ErrConstraint, \"an absent value is %d zero bytes\")", f.Name, f.AbsentSize)
			}
			b.p("\t}")
		default:
			b.p("\t%s.decode(r, wire.Join(path, %q))", x, f.Name)
		}
	}
	for _, c := range conds {
		b.p("\tif !r.Failed() && (%s) {", c.cond)
		b.p("\t\tr.Fail(path, %q, o, %s, %s)", f.Name, c.err, c.detail)
		b.p("\t}")
	}
	if needO {
		b.p("\t_ = o")
		b.p("\t}")
	}
	return b.String()
}

func (s *Schema) decodeList(b *buf, f *FieldDef, x string) {
	elem := s.goTypeOf(f.Of, nil)
	if f.Enum != "" {
		elem = f.Enum
	}
	min := s.minSize(f.Of)
	switch f.Count.Kind {
	case "u8", "u32", "field":
		if f.Count.Kind == "u32" {
			b.p("\tcnt := int(r.U32LE(path, %q))", f.Name)
		} else if f.Count.Kind == "u8" {
			b.p("\tcnt := int(r.U8(path, %q))", f.Name)
		} else {
			b.p("\tcnt := int(m.%s)", goName(f.Count.Field))
		}
		b.p("\tif cnt > r.Remaining()/%d {", min)
		b.p("\t\tr.Fail(path, %q, o, wire.ErrShortBuffer, \"count \"+strconv.Itoa(cnt)+\" cannot fit the input\")", f.Name)
		b.p("\t\tcnt = 0")
		b.p("\t}")
		b.p("\tif cnt > 0 {")
		b.p("\t\t%s = make([]%s, cnt)", x, elem)
		b.p("\t\tp := wire.Join(path, %q)", f.Name)
		b.p("\t\tfor i := 0; i < cnt && !r.Failed(); i++ {")
		b.WriteString(s.elemDecodeEnum(f.Enum, f.Of, x+"[i]", "p", "", "\t\t\t"))
		b.p("\t\t}")
		b.p("\t}")
	case "to_end":
		b.p("\tp := wire.Join(path, %q)", f.Name)
		b.p("\tfor r.Remaining() > 0 && !r.Failed() {")
		b.p("\t\tvar e %s", elem)
		b.WriteString(s.elemDecodeEnum(f.Enum, f.Of, "e", "p", "", "\t\t"))
		b.p("\t\t%s = append(%s, e)", x, x)
		b.p("\t}")
	case "chain":
		b.p("\tp := wire.Join(path, %q)", f.Name)
		b.p("\tfor !r.Failed() {")
		b.p("\t\tmore := r.U8(path, %q)", f.Name)
		b.p("\t\tif more == 0 || r.Failed() {")
		b.p("\t\t\tbreak")
		b.p("\t\t}")
		b.p("\t\tif more != 1 {")
		b.p("\t\t\tr.Fail(path, %q, r.Off()-1, wire.ErrConstraint, \"continuation byte must be 0 or 1\")", f.Name)
		b.p("\t\t\tbreak")
		b.p("\t\t}")
		b.p("\t\tvar e %s", elem)
		b.WriteString(s.elemDecodeEnum(f.Enum, f.Of, "e", "p", "", "\t\t"))
		b.p("\t\t%s = append(%s, e)", x, x)
		b.p("\t}")
	}
}

type cond struct{ cond, err, detail string }

func lenCond(x string, p IntPair) (string, string) {
	var c []string
	var d []string
	if p.Min != nil && *p.Min > 0 {
		c = append(c, fmt.Sprintf("len(%s) < %d", x, *p.Min))
	}
	if p.Max != nil {
		c = append(c, fmt.Sprintf("len(%s) > %d", x, *p.Max))
	}
	lo, hi := "0", "unbounded"
	if p.Min != nil {
		lo = strconv.FormatInt(*p.Min, 10)
	}
	if p.Max != nil {
		hi = strconv.FormatInt(*p.Max, 10)
	}
	d = append(d, "length must be "+lo+".."+hi)
	return strings.Join(c, " || "), strings.Join(d, "")
}

// conds are the constraint checks of one field, shared by decode and Validate.
func (s *Schema) conds(f *FieldDef, x string) []cond {
	var out []cond
	if f.Enum != "" && f.Type != "list" && f.Type != "optional" {
		out = append(out, cond{"!" + x + ".Valid()", "wire.ErrUnknownDiscriminant", fmt.Sprintf("\"value \"+strconv.FormatUint(uint64(%s), 10)", x)})
	}
	if f.Range.Set && integerTypes[f.Type] {
		unsigned := strings.HasPrefix(f.Type, "u")
		var c []string
		if f.Range.Min != nil && !(unsigned && *f.Range.Min <= 0) {
			c = append(c, fmt.Sprintf("%s < %d", x, *f.Range.Min))
		}
		if f.Range.Max != nil {
			maxv := fmt.Sprint(*f.Range.Max)
			if unsigned && *f.Range.Max < 0 {
				maxv = strconv.FormatUint(uint64(*f.Range.Max), 10)
			}
			c = append(c, fmt.Sprintf("%s > %s", x, maxv))
		}
		if len(c) > 0 {
			lo, hi := "-inf", "+inf"
			if f.Range.Min != nil {
				lo = fmt.Sprint(*f.Range.Min)
			}
			if f.Range.Max != nil {
				hi = fmt.Sprint(*f.Range.Max)
			}
			out = append(out, cond{strings.Join(c, " || "), "wire.ErrConstraint", strconv.Quote("must be in " + lo + ".." + hi)})
		}
	}
	if f.Const != nil {
		out = append(out, cond{fmt.Sprintf("%s != %d", x, *f.Const), "wire.ErrConstraint", strconv.Quote(fmt.Sprintf("must be %d", *f.Const))})
	}
	lp := f.Len
	if !lp.Set {
		switch f.Type {
		case "name":
			one, max := int64(1), int64(255)
			lp = IntPair{Set: true, Min: &one, Max: &max}
		case "str8", "bytes8":
			max := int64(255)
			lp = IntPair{Set: true, Max: &max}
		}
	}
	if lp.Set {
		if c, d := lenCond(x, lp); c != "" {
			out = append(out, cond{c, "wire.ErrConstraint", strconv.Quote(d)})
		}
	}
	if f.UTF8 && (f.Type == "bytes8" || f.Type == "bytes32" || f.Type == "rest") {
		out = append(out, cond{"!utf8.Valid(" + x + ")", "wire.ErrInvalidUTF8", "\"\""})
	}
	return out
}

func (s *Schema) validateStmts(f *FieldDef, x string, siblings []*FieldDef) string {
	var b buf
	if len(f.LengthOf) > 0 {
		return ""
	}
	for _, c := range s.conds(f, x) {
		b.p("\tif %s {", c.cond)
		b.p("\t\treturn invalid(msg, path, %q, %s, %s)", f.Name, c.err, c.detail)
		b.p("\t}")
	}
	if goStringType(f.Type) {
		b.p("\tif !utf8.ValidString(%s) {", x)
		b.p("\t\treturn invalid(msg, path, %q, wire.ErrInvalidUTF8, \"\")", f.Name)
		b.p("\t}")
	}
	switch f.Type {
	case "batch":
		b.p("\tif err := CheckBatch(%s); err != nil {", x)
		b.p("\t\treturn invalid(msg, path, %q, err, \"\")", f.Name)
		b.p("\t}")
	case "batches":
		b.p("\tif err := CheckBatches(%s); err != nil {", x)
		b.p("\t\treturn invalid(msg, path, %q, err, \"\")", f.Name)
		b.p("\t}")
	case "options":
		b.p("\tif err := %s.Validate(); err != nil {", x)
		b.p("\t\treturn invalid(msg, path, %q, err, \"\")", f.Name)
		b.p("\t}")
	case "list":
		if f.Enum != "" {
			b.p("\tfor i := range %s {", x)
			b.p("\t\tif !%s[i].Valid() {", x)
			b.p("\t\t\treturn invalid(msg, path, %q, wire.ErrUnknownDiscriminant, \"value \"+strconv.FormatUint(uint64(%s[i]), 10))", f.Name, x)
			b.p("\t\t}")
			b.p("\t}")
		}
		if f.Count.Kind == "field" {
			b.p("\tif len(%s) != int(m.%s) {", x, goName(f.Count.Field))
			b.p("\t\treturn invalid(msg, path, %q, wire.ErrConstraint, \"length differs from %s\")", f.Name, f.Count.Field)
			b.p("\t}")
		}
		if _, isType := s.types[f.Of]; isType {
			b.p("\tfor i := range %s {", x)
			b.p("\t\tif err := %s[i].validate(msg, wire.Join(path, %q)); err != nil {", x, f.Name)
			b.p("\t\t\treturn err")
			b.p("\t\t}")
			b.p("\t}")
		} else if goStringType(f.Of) || f.Of == "bytes8" {
			b.p("\tfor i := range %s {", x)
			if f.Of == "name" {
				b.p("\t\tif len(%s[i]) < 1 || len(%s[i]) > 255 {", x, x)
			} else if f.Of == "str32" {
				b.p("\t\tif false {")
			} else {
				b.p("\t\tif len(%s[i]) > 255 {", x)
			}
			b.p("\t\t\treturn invalid(msg, path, %q, wire.ErrConstraint, \"element length\")", f.Name)
			b.p("\t\t}")
			b.p("\t}")
		}
	case "optional":
		if f.Enum != "" {
			b.p("\tif %s != nil && !(*%s).Valid() {", x, x)
			b.p("\t\treturn invalid(msg, path, %q, wire.ErrUnknownDiscriminant, \"\")", f.Name)
			b.p("\t}")
		}
		if _, isType := s.types[f.Of]; isType {
			b.p("\tif %s != nil {", x)
			b.p("\t\tif err := %s.validate(msg, wire.Join(path, %q)); err != nil {", x, f.Name)
			b.p("\t\t\treturn err")
			b.p("\t\t}")
			b.p("\t}")
		}
	default:
		if _, isType := s.types[f.Type]; isType {
			b.p("\tif err := %s.validate(msg, wire.Join(path, %q)); err != nil {", x, f.Name)
			b.p("\t\treturn err")
			b.p("\t}")
		}
	}
	return b.String()
}

func (s *Schema) emitCommandTable() string {
	var b buf
	b.enum("Auth", "is what a command needs before the server runs it.", "Authorization levels.", 0, []enumConst{
		{"AuthNone", "allowed before login (PING, the login commands)."},
		{"AuthLogin", "needs a login."},
		{"AuthPermission", "needs a login and a permission."},
	})
	b.p("// CommandMeta describes one command: one table drives dispatch on both the client and the embedded server.")
	b.p("type CommandMeta struct {")
	b.p("\tCode           uint32          // command code (travels on the wire only for NonReplicated)")
	b.p("\tName           string          // snake_case name, e.g. create_topic")
	b.p("\tWireName       string          // dotted name for logs and metrics, e.g. topic.create")
	b.p("\tOperation      Operation       // operation byte the request travels with")
	b.p("\tPlane          Plane           // class of the operation")
	b.p("\tResultFramed   bool            // replies start with the result section")
	b.p("\tAuth           Auth            // what the command needs")
	b.p("\tEmptyMeansNone bool            // an empty success body means \"not found\"")
	b.p("\tLegacy         bool            // a retired code the server rejects")
	b.p("\tSince, Until   ProtocolVersion // protocol window (0 = open)")
	b.p("}")
	b.p("")
	b.p("// In reports whether the command exists in protocol p.")
	b.p("func (c *CommandMeta) In(p ProtocolVersion) bool {")
	b.p("\treturn (c.Since == 0 || p >= c.Since) && (c.Until == 0 || p < c.Until)")
	b.p("}")
	b.p("")
	cmds := append([]*CommandFile(nil), s.Commands...)
	sortCommands(cmds)
	b.p("// Commands lists every command of the schema in code order.")
	b.p("var Commands = [...]CommandMeta{")
	for _, c := range cmds {
		op, plane, rf := "Operation(0)", "PlaneUnknown", false
		if c.Operation != "" {
			o := s.ops[c.Operation]
			op, plane, rf = "Operation"+o.Name, planeOf[o.Class], o.ResultFramed == "yes" || o.ResultFramed == "when_body"
		}
		auth := map[string]string{"none": "AuthNone", "login": "AuthLogin", "permission": "AuthPermission"}[c.Auth]
		b.p("\t{Code: Code%s, Name: %q, WireName: %q, Operation: %s, Plane: %s, ResultFramed: %v, Auth: %s, EmptyMeansNone: %v, Legacy: %v, Since: %s, Until: %s},",
			goName(c.Command), c.Command, c.WireName, op, plane, rf, auth, c.Reply.EmptyMeans == "none", c.Legacy, s.protoExpr(c.Since), s.protoExpr(c.Until))
	}
	b.p("}")
	b.p("")
	b.p("// Body is what every generated body type implements.")
	b.p("type Body interface {")
	b.p("\tEncodedSize() int")
	b.p("\tAppendTo(dst []byte) []byte")
	b.p("\tDecodeFrom(src []byte) (int, error)")
	b.p("\tValidate() error")
	b.p("}")
	b.p("")
	for _, part := range []string{"Request", "Response"} {
		b.p("// New%sBody returns a zero %s body of command code in protocol p, or false when the command has no %s body there.", part, strings.ToLower(part), strings.ToLower(part))
		b.p("func New%sBody(code uint32, p ProtocolVersion) (Body, bool) {", part)
		b.p("\tswitch code {")
		for _, c := range cmds {
			bd := c.Request
			if part == "Response" {
				bd = c.Response
			}
			if bd == nil {
				continue
			}
			b.p("\tcase Code%s:", goName(c.Command))
			if bd.Type != "" {
				b.p("\t\treturn &%s%s{}, %s", goName(c.Command), part, s.versionCond("p", c.Since, c.Until))
				continue
			}
			shapes := s.shapes(c, bd.Fields)
			for i, sh := range shapes {
				if i == len(shapes)-1 {
					b.p("\t\treturn &%s%s%s{}, %s", goName(c.Command), part, sh.Suffix, s.versionCond("p", c.Since, c.Until))
					break
				}
				last := sh.Protos[len(sh.Protos)-1]
				b.p("\t\tif p <= %s {", protoIdent(last.Version))
				b.p("\t\t\treturn &%s%s%s{}, %s", goName(c.Command), part, sh.Suffix, s.versionCond("p", c.Since, c.Until))
				b.p("\t\t}")
			}
		}
		b.p("\t}")
		b.p("\treturn nil, false")
		b.p("}")
		b.p("")
	}
	b.p("// LookupCommand returns the table entry of a command code.")
	b.p("func LookupCommand(code uint32) (*CommandMeta, bool) {")
	b.p("\tswitch code {")
	for i, c := range cmds {
		b.p("\tcase Code%s:", goName(c.Command))
		b.p("\t\treturn &Commands[%d], true", i)
	}
	b.p("\t}")
	b.p("\treturn nil, false")
	b.p("}")
	return b.String()
}

func sortCommands(c []*CommandFile) {
	for i := 1; i < len(c); i++ {
		for j := i; j > 0 && c[j].Code < c[j-1].Code; j-- {
			c[j], c[j-1] = c[j-1], c[j]
		}
	}
}
