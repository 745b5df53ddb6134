{{/* Name of the application (Deployment and labels). */}}
{{- define "kafka-iggy.appName" -}}
{{- .Values.app.name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Prefix of the sidecar's own objects (ConfigMap, Secret). */}}
{{- define "kafka-iggy.fullname" -}}
{{- printf "%s-kafka-iggy" (include "kafka-iggy.appName" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Selector labels of the application's pods. */}}
{{- define "kafka-iggy.selectorLabels" -}}
app.kubernetes.io/name: {{ include "kafka-iggy.appName" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* Common labels. */}}
{{- define "kafka-iggy.labels" -}}
{{ include "kafka-iggy.selectorLabels" . }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* Name of the Secret with the Iggy login. */}}
{{- define "kafka-iggy.secretName" -}}
{{- default (printf "%s-login" (include "kafka-iggy.fullname" .)) .Values.iggy.existingSecret -}}
{{- end -}}

{{/* Name of the Secret with the peer link's shared secret (created by the operator). */}}
{{- define "kafka-iggy.peerSecretName" -}}
{{- default (printf "%s-peer" (include "kafka-iggy.fullname" .)) .Values.iggy.peerSecretName -}}
{{- end -}}

{{/* The sidecar's config.yaml: what the chart sets, with .Values.config merged over it. */}}
{{- define "kafka-iggy.config" -}}
{{- $base := dict
  "listener" (dict "address" (printf "127.0.0.1:%d" (int .Values.sidecar.ports.kafka)))
  "peers" (dict "address" (printf "0.0.0.0:%d" (int .Values.sidecar.ports.peers)))
  "coordination" (dict "domain" (include "kafka-iggy.appName" .))
  "iggy" (dict "address" .Values.iggy.address)
  "embedded" (dict "mode" "off")
  "admin" (dict "address" (printf "0.0.0.0:%d" (int .Values.sidecar.ports.admin)))
-}}
{{- toYaml (mustMergeOverwrite $base (deepCopy .Values.config)) -}}
{{- end -}}

{{/* The sidecar's Iggy user name: iggy.username, or the app's name. */}}
{{- define "kafka-iggy.iggyUser" -}}
{{- default (include "kafka-iggy.appName" .) .Values.iggy.username -}}
{{- end -}}
