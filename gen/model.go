package main

// The schema model. Every struct mirrors one YAML mapping of schema/; yaml tags
// name the only keys accepted (strict decoding rejects any other key), and
// Pos records where the mapping starts for file:line errors.

// Pos is a source position.
type Pos struct {
	File string
	Line int
}

// ProtocolFile is schema/protocol.yaml.
type ProtocolFile struct {
	Protocols  []*ProtocolDef `yaml:"protocols"`
	Limits     []*LimitDef    `yaml:"limits"`
	Layouts    []*LayoutDef   `yaml:"layouts"`
	Enums      []*EnumDef     `yaml:"enums"`
	Operations []*OpDef       `yaml:"operations"`
	Doc        string         `yaml:"doc"`
}

// ProtocolDef is one protocol generation.
type ProtocolDef struct {
	Pos     `yaml:"-"`
	Version string `yaml:"version"`
	Packed  uint32 `yaml:"packed"`
	Servers string `yaml:"servers"`
	Doc     string `yaml:"doc"`
}

// LimitDef is a named numeric constant.
type LimitDef struct {
	Pos   `yaml:"-"`
	Name  string `yaml:"name"`
	Value int64  `yaml:"value"`
	Unit  string `yaml:"unit"`
	Doc   string `yaml:"doc"`
}

// LayoutDef is a fixed-offset structure (frame headers, batch headers).
type LayoutDef struct {
	Pos    `yaml:"-"`
	Name   string            `yaml:"name"`
	Size   int               `yaml:"size"`
	Doc    string            `yaml:"doc"`
	Fields []*LayoutFieldDef `yaml:"fields"`
}

// LayoutFieldDef is one field of a layout.
type LayoutFieldDef struct {
	Pos    `yaml:"-"`
	Name   string  `yaml:"name"`
	Offset int     `yaml:"offset"`
	Type   string  `yaml:"type"`
	Size   int     `yaml:"size"`
	Const  *int64  `yaml:"const"`
	Range  IntPair `yaml:"range"`
	Enum   string  `yaml:"enum"`
	Doc    string  `yaml:"doc"`
	Since  string  `yaml:"since"`
	Until  string  `yaml:"until"`
}

// EnumDef is a named set of discriminant values.
type EnumDef struct {
	Pos    `yaml:"-"`
	Name   string          `yaml:"name"`
	Type   string          `yaml:"type"`
	Doc    string          `yaml:"doc"`
	Values []*EnumValueDef `yaml:"values"`
	Since  string          `yaml:"since"`
	Until  string          `yaml:"until"`
}

// EnumValueDef is one enum value.
type EnumValueDef struct {
	Pos    `yaml:"-"`
	Name   string  `yaml:"name"`
	Value  int64   `yaml:"value"`
	Doc    string  `yaml:"doc"`
	Size   IntPair `yaml:"size"`
	Status *int64  `yaml:"status"`
	Since  string  `yaml:"since"`
	Until  string  `yaml:"until"`
}

// OpDef is one operation discriminant (request byte 176, reply byte 208).
type OpDef struct {
	Pos          `yaml:"-"`
	Name         string `yaml:"name"`
	Value        int64  `yaml:"value"`
	Class        string `yaml:"class"`
	Client       bool   `yaml:"client"`
	ResultFramed string `yaml:"result_framed"`
	Doc          string `yaml:"doc"`
	Since        string `yaml:"since"`
	Until        string `yaml:"until"`
}

// EncodingsFile is schema/encodings.yaml (and the types: of batch.yaml).
type EncodingsFile struct {
	Doc     string       `yaml:"doc"`
	Enums   []*EnumDef   `yaml:"enums"`
	Types   []*TypeDef   `yaml:"types"`
	Layouts []*LayoutDef `yaml:"layouts"`
}

// TypeDef is a variable-layout structure.
type TypeDef struct {
	Pos      `yaml:"-"`
	Name     string       `yaml:"name"`
	Doc      string       `yaml:"doc"`
	Extends  string       `yaml:"extends"`
	Fields   []*FieldDef  `yaml:"fields"`
	Variants *VariantsDef `yaml:"variants"`
	Since    string       `yaml:"since"`
	Until    string       `yaml:"until"`
}

// VariantsDef holds per-discriminant rules.
type VariantsDef struct {
	Pos   `yaml:"-"`
	On    string        `yaml:"on"`
	Cases []*VariantDef `yaml:"cases"`
}

// VariantDef is one rule of a VariantsDef.
type VariantDef struct {
	Pos   `yaml:"-"`
	When  string  `yaml:"when"`
	Field string  `yaml:"field"`
	Len   IntPair `yaml:"len"`
	UTF8  bool    `yaml:"utf8"`
	Doc   string  `yaml:"doc"`
}

// FieldDef is one field of a type or message body.
type FieldDef struct {
	Pos      `yaml:"-"`
	Name     string   `yaml:"name"`
	Type     string   `yaml:"type"`
	Doc      string   `yaml:"doc"`
	Of       string   `yaml:"of"`
	Count    CountDef `yaml:"count"`
	Framing  string   `yaml:"framing"`
	Size     int      `yaml:"size"`
	Enum     string   `yaml:"enum"`
	Range    IntPair  `yaml:"range"`
	Len      IntPair  `yaml:"len"`
	UTF8     bool     `yaml:"utf8"`
	Const    *int64   `yaml:"const"`
	LengthOf []string `yaml:"length_of"`
	// AbsentSize (optional only): an absent value is written as this many
	// zero bytes instead of a single 0 presence byte.
	AbsentSize int    `yaml:"absent_size"`
	Unit       string `yaml:"unit"`
	Since      string `yaml:"since"`
	Until      string `yaml:"until"`
}

// CountDef says how many elements a list holds: "u32", "to_end", "chain" or
// {field: name}.
type CountDef struct {
	Kind  string // u32 | to_end | chain | field | "" (unset)
	Field string
}

// IntPair is a [min, max] bound, or a single number meaning [n, n]; either end
// may be null.
type IntPair struct {
	Set      bool
	Min, Max *int64
}

// CommandFile is schema/commands/<domain>/<command>.yaml.
type CommandFile struct {
	Pos       `yaml:"-"`
	Domain    string      `yaml:"-"`
	Command   string      `yaml:"command"`
	Code      uint32      `yaml:"code"`
	WireName  string      `yaml:"wire_name"`
	Operation string      `yaml:"operation"`
	Auth      string      `yaml:"auth"`
	Doc       string      `yaml:"doc"`
	Reply     ReplyDef    `yaml:"reply"`
	Request   *BodyDef    `yaml:"request"`
	Response  *BodyDef    `yaml:"response"`
	Errors    []*ErrorRef `yaml:"errors"`
	Types     []*TypeDef  `yaml:"types"`
	Enums     []*EnumDef  `yaml:"enums"`
	Legacy    bool        `yaml:"legacy"`
	Since     string      `yaml:"since"`
	Until     string      `yaml:"until"`
}

// ReplyDef describes reply-level conventions.
type ReplyDef struct {
	EmptyMeans string `yaml:"empty_means"`
	Doc        string `yaml:"doc"`
}

// BodyDef is a request or response body: a field list or a whole shared type.
type BodyDef struct {
	Pos    `yaml:"-"`
	Doc    string      `yaml:"doc"`
	Type   string      `yaml:"type"`
	Fields []*FieldDef `yaml:"fields"`
}

// ErrorRef documents one error a command can produce.
type ErrorRef struct {
	Pos     `yaml:"-"`
	Code    uint32 `yaml:"code"`
	Channel string `yaml:"channel"`
	Doc     string `yaml:"doc"`
}

// OptionsFile is schema/options.yaml.
type OptionsFile struct {
	Doc      string        `yaml:"doc"`
	Catalogs []*CatalogDef `yaml:"catalogs"`
}

// CatalogDef is the option catalog of one resource scope.
type CatalogDef struct {
	Pos       `yaml:"-"`
	Scope     string       `yaml:"scope"`
	ScopeCode int64        `yaml:"scope_code"`
	Doc       string       `yaml:"doc"`
	Options   []*OptionDef `yaml:"options"`
}

// OptionDef is one option key.
type OptionDef struct {
	Pos              `yaml:"-"`
	Key              string   `yaml:"key"`
	Kind             string   `yaml:"kind"`
	Also             []string `yaml:"also"`
	Parse            string   `yaml:"parse"`
	Unit             string   `yaml:"unit"`
	Default          Scalar   `yaml:"default"`
	ZeroMeansDefault bool     `yaml:"zero_means_default"`
	Sentinel         *Scalar  `yaml:"sentinel"`
	SentinelMeans    string   `yaml:"sentinel_means"`
	Range            IntPair  `yaml:"range"`
	MultipleOf       uint64   `yaml:"multiple_of"`
	Choices          []string `yaml:"choices"`
	Updatable        bool     `yaml:"updatable"`
	Description      string   `yaml:"description"`
	Doc              string   `yaml:"doc"`
	Since            string   `yaml:"since"`
	Until            string   `yaml:"until"`
}

// Scalar keeps a YAML scalar's text and tag.
type Scalar struct {
	Set  bool
	Text string
	Tag  string
}

// ErrorsFile is schema/errors.yaml.
type ErrorsFile struct {
	Doc    string      `yaml:"doc"`
	Errors []*ErrorDef `yaml:"errors"`
}

// errorClasses are the values of ErrorDef.Class, in the order of the
// generated StatusClass constants (0 is StatusClassNone), each with its doc.
var errorClasses = []struct{ Name, Doc string }{
	{"retriable", "transient or session trouble: the same call may succeed when tried again"},
	{"not_found", "the stream, topic or partition does not exist"},
	{"unauthorized", "an authorization or authentication refusal that a retry does not fix"},
	{"invalid_config", "an option key, value or size the server refuses"},
	{"topic_exists", "a topic of that name exists already"},
	{"invalid_partitions", "a partition count or id space the server refuses"},
	{"invalid_name", "a topic name the server refuses"},
	{"too_large", "a message or its headers are too large"},
	{"invalid_group", "a consumer group name the server refuses"},
	{"invalid_offset", "an offset beyond what the partition holds"},
	{"limit", "a server-wide limit on streams or topics is reached"},
}

// ErrorDef is one Iggy error code.
type ErrorDef struct {
	Pos     `yaml:"-"`
	Name    string `yaml:"name"`
	Code    uint32 `yaml:"code"`
	Doc     string `yaml:"doc"`
	Gateway bool   `yaml:"gateway"`
	// Class is what a client makes of the code (errorClasses): retriable,
	// not_found, unauthorized, or the kind of refusal; "" for none.
	Class string `yaml:"class"`
	Since string `yaml:"since"`
	Until string `yaml:"until"`
}

// Schema is everything loaded from schema/.
type Schema struct {
	Protocol  *ProtocolFile
	Encodings []*EncodingsFile // encodings.yaml, batch.yaml
	Options   *OptionsFile
	Errors    *ErrorsFile
	Commands  []*CommandFile

	// resolved
	protocols []*ProtocolDef // sorted by Packed
	types     map[string]*TypeDef
	typeFile  map[string]string
	enums     map[string]*EnumDef
	ops       map[string]*OpDef
}
