package proxy

import (
	"github.com/panjf2000/gnet/v2/pkg/logging"
	"github.com/rs/zerolog"
)

// gnetLogger routes gnet's own log lines (loop start, accept failures,
// shutdown errors) to zerolog with component=gnet. Fatalf logs at error
// level and does not exit: a library never ends the process.
type gnetLogger struct{ log zerolog.Logger }

var _ logging.Logger = gnetLogger{}

func newGnetLogger(log zerolog.Logger) gnetLogger {
	return gnetLogger{log: log.With().Str("component", "gnet").Logger()}
}

func (l gnetLogger) Debugf(format string, args ...any) { l.log.Debug().Msgf(format, args...) }
func (l gnetLogger) Infof(format string, args ...any)  { l.log.Info().Msgf(format, args...) }
func (l gnetLogger) Warnf(format string, args ...any)  { l.log.Warn().Msgf(format, args...) }
func (l gnetLogger) Errorf(format string, args ...any) { l.log.Error().Msgf(format, args...) }
func (l gnetLogger) Fatalf(format string, args ...any) {
	l.log.Error().Bool("fatal", true).Msgf(format, args...)
}
