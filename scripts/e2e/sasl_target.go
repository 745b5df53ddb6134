package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// SASL credentials of the SASL targets (StartSASLSidecar, and the Kafka
// broker the compat runner configures with KafkaSASLBrokerEnv): one user
// with a SCRAM-SHA-256 and a SCRAM-SHA-512 credential, OAUTHBEARER with
// unsigned tokens. franz-go's kgo suite reads them from KGO_TEST_SCRAM and
// KGO_TEST_SCRAM_SEEDS / KGO_TEST_OAUTH_SEEDS.
const (
	SASLUser     = "kgo-scram"
	SASLPassword = "kgo-scram-secret"
)

// StartSASLSidecar starts a second sidecar (the hook's binary and embedded
// Iggy, as startSidecar) whose listener, on loopback, is SASL_PLAINTEXT
// with SCRAM-SHA-256, SCRAM-SHA-512 (SASLUser's credentials made by
// `kafka-iggy scram`) and OAUTHBEARER with sasl.oauthbearer.unsecured
// (unsigned tokens, as Kafka's default validator); requests run as the
// sidecar's Iggy user (sasl.authorization sidecar).
func StartSASLSidecar() (tgt Target, stop func(), ok bool, err error) {
	tgt, stop, ok, err = runSidecar(func(bin, dir string) ([]string, error) {
		var lines []string
		for _, mech := range []string{"SCRAM-SHA-256", "SCRAM-SHA-512"} {
			cmd := exec.Command(bin, "scram", "--user", SASLUser, "--mechanism", mech)
			cmd.Stdin = strings.NewReader(SASLPassword + "\n")
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			if err := cmd.Run(); err != nil {
				return nil, fmt.Errorf("kafka-iggy scram --mechanism %s: %v\n%s", mech, err, errb.String())
			}
			lines = append(lines, strings.TrimSpace(out.String()))
		}
		path := filepath.Join(dir, "scram-credentials")
		if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
			return nil, err
		}
		return []string{
			"KAFKA_IGGY_SASL__ENABLED=true",
			"KAFKA_IGGY_SASL__MECHANISMS=SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER",
			"KAFKA_IGGY_SASL__SCRAM_FILE=" + path,
			"KAFKA_IGGY_SASL__OAUTHBEARER__UNSECURED=true",
			"KAFKA_IGGY_SASL__AUTHORIZATION=sidecar",
		}, nil
	})
	tgt.Name = "sidecar-sasl"
	return tgt, stop, ok, err
}

// KafkaSASLBrokerEnv is the environment of scripts/kafka/start.sh that adds
// a SASL_PLAINTEXT listener to the broker with the same mechanisms as
// StartSASLSidecar: SCRAM-SHA-256 and SCRAM-SHA-512 for SASLUser (stored
// at format time) and OAUTHBEARER with Kafka's default (unsecured)
// validator. The properties file is written in dir. The listener's address
// is then in the broker dir's listener.SASL_PLAINTEXT.
func KafkaSASLBrokerEnv(dir string) ([]string, error) {
	props := filepath.Join(dir, "sasl.properties")
	conf := `sasl.enabled.mechanisms=SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER
listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredLoginStringClaim_sub="admin";
`
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(props, []byte(conf), 0o600); err != nil {
		return nil, err
	}
	cred := fmt.Sprintf("[name=%s,password=%s]", SASLUser, SASLPassword)
	return []string{
		"KAFKA_IGGY_BROKER_LISTENERS=SASL_PLAINTEXT",
		"KAFKA_IGGY_BROKER_PROPS=" + props,
		"KAFKA_IGGY_BROKER_SCRAM=SCRAM-SHA-256=" + cred + " SCRAM-SHA-512=" + cred,
	}, nil
}
