package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/rs/zerolog"
)

// newLogger builds the process logger from cfg, writing to w (standard
// error in main). It is the only logger the sidecar creates: main passes it
// (or children made with With) to every constructor; nothing uses a global
// logger. cfg must have passed Validate; an unknown level falls back to
// info and an unknown format to JSON. Format "auto" is console when w is a
// terminal and JSON otherwise.
//
// JSON lines carry "time" (RFC 3339 with nanoseconds, UTC), "level" and
// "message", plus the fields of each line: stable snake_case keys such as
// component, conn_id, api_key, api_version, corr_id, close_reason and
// iggy_code. Console lines show the time, the level, the component, the
// message and then the other fields as key=value. Secrets never reach a
// log line: the configuration is logged through
// Config.MarshalZerologObject, which masks them.
func newLogger(cfg LogConfig, w io.Writer) zerolog.Logger {
	level, err := zerolog.ParseLevel(strings.ToLower(cfg.Level))
	if err != nil || level == zerolog.NoLevel {
		level = zerolog.InfoLevel
	}
	tty := isTerminal(w)
	if useConsole(cfg.Format, tty) {
		// The hook's nanosecond timestamp, not Timestamp() (whole seconds
		// under zerolog's default TimeFieldFormat): console lines show
		// milliseconds.
		return zerolog.New(consoleWriter(w, tty)).Level(level).Hook(timeHook{})
	}
	// The timestamp is added by a hook rather than through
	// zerolog.TimeFieldFormat, a package global this function must not
	// change.
	return zerolog.New(w).Level(level).Hook(timeHook{})
}

// useConsole reports whether format, on a terminal or not, means console
// lines.
func useConsole(format string, terminal bool) bool {
	return format == LogFormatConsole || (format == LogFormatAuto && terminal)
}

// componentField is the field console lines show before the message.
const componentField = "component"

// consoleWriter writes "15:04:05.000 INF proxy: message key=value ...",
// coloured when color is set.
func consoleWriter(w io.Writer, color bool) zerolog.ConsoleWriter {
	return zerolog.ConsoleWriter{
		Out:           w,
		TimeFormat:    "15:04:05.000",
		NoColor:       !color,
		PartsOrder:    []string{zerolog.TimestampFieldName, zerolog.LevelFieldName, componentField, zerolog.MessageFieldName},
		FieldsExclude: []string{componentField},
		FormatPartValueByName: func(v any, name string) string {
			if name != componentField || v == nil {
				return ""
			}
			return fmt.Sprint(v) + ":"
		},
	}
}

// timeHook adds "time" in RFC 3339 with nanoseconds, UTC.
type timeHook struct{}

// Run adds the timestamp to every event that is written.
func (timeHook) Run(e *zerolog.Event, _ zerolog.Level, _ string) {
	e.Str(zerolog.TimestampFieldName, time.Now().UTC().Format(time.RFC3339Nano))
}

// isTerminal reports whether w is a terminal (a tty, not merely a
// character device such as /dev/null).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && isatty.IsTerminal(f.Fd())
}
