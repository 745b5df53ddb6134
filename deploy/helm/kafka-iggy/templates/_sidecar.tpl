{{/*
The kafka-iggy native sidecar: the one definition of the container that the
chart's Deployment runs and the injector adds to annotated pods (its
ConfigMap renders this same template), so the two cannot drift. The Go
runtime's memory limit (GOMEMLIMIT) is left to the sidecar, which derives it
from its memory budget (3/4 of the container's memory limit, plus 1/16).
*/}}
{{- define "kafka-iggy.sidecarContainer" -}}
name: kafka-iggy
image: "{{ .Values.sidecar.image.repository }}:{{ .Values.sidecar.image.tag | default .Chart.AppVersion }}"
imagePullPolicy: {{ .Values.sidecar.image.pullPolicy }}
restartPolicy: Always
args: ["serve", "--config=/etc/kafka-iggy/config.yaml"]
env:
  - name: POD_IP
    valueFrom:
      fieldRef:
        fieldPath: status.podIP
  - name: KAFKA_IGGY_PEERS__ADVERTISED_HOST
    value: $(POD_IP)
  - name: KAFKA_IGGY_IGGY__USERNAME
    valueFrom:
      secretKeyRef:
        name: {{ include "kafka-iggy.secretName" . }}
        key: username
  - name: KAFKA_IGGY_IGGY__PASSWORD
    valueFrom:
      secretKeyRef:
        name: {{ include "kafka-iggy.secretName" . }}
        key: password
  - name: KAFKA_IGGY_PEERS__SECRET
    valueFrom:
      secretKeyRef:
        name: {{ include "kafka-iggy.peerSecretName" . }}
        key: peer-secret
  {{- with .Values.sidecar.extraEnv }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
ports:
  # Kafka listens on loopback only: not a pod port.
  - name: peers
    containerPort: {{ .Values.sidecar.ports.peers }}
    protocol: TCP
  - name: admin
    containerPort: {{ .Values.sidecar.ports.admin }}
    protocol: TCP
startupProbe:
  httpGet:
    path: /readyz
    port: admin
  {{- toYaml .Values.sidecar.startupProbe | nindent 2 }}
readinessProbe:
  httpGet:
    path: /readyz
    port: admin
  {{- toYaml .Values.sidecar.readinessProbe | nindent 2 }}
livenessProbe:
  httpGet:
    path: /healthz
    port: admin
  {{- toYaml .Values.sidecar.livenessProbe | nindent 2 }}
resources:
  {{- toYaml .Values.sidecar.resources | nindent 2 }}
securityContext:
  {{- toYaml .Values.sidecar.securityContext | nindent 2 }}
volumeMounts:
  - name: kafka-iggy-config
    mountPath: /etc/kafka-iggy
    readOnly: true
{{- end -}}

{{/* The pod volume the sidecar mounts: its config.yaml. */}}
{{- define "kafka-iggy.sidecarVolume" -}}
name: kafka-iggy-config
configMap:
  name: {{ include "kafka-iggy.fullname" . }}-config
{{- end -}}

{{/* The Prometheus scrape annotations of a pod with the sidecar. */}}
{{- define "kafka-iggy.scrapeAnnotations" -}}
prometheus.io/scrape: "true"
prometheus.io/port: {{ .Values.sidecar.ports.admin | quote }}
prometheus.io/path: /metrics
{{- end -}}
