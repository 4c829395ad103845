{{/* Chart name, overridable. */}}
{{- define "sluice.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Object name prefix: <release>-sluice, or the release name alone when it
already contains the chart name. Kept to 40 characters so that suffixes
(-coordinator, -node-headless, ...) stay within the 63-character limit.
*/}}
{{- define "sluice.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 40 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 40 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "sluice.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels of every object. */}}
{{- define "sluice.labels" -}}
helm.sh/chart: {{ include "sluice.chart" . }}
{{ include "sluice.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: sluice
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* Labels that select the release's pods; add app.kubernetes.io/component. */}}
{{- define "sluice.selectorLabels" -}}
app.kubernetes.io/name: {{ include "sluice.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "sluice.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{/* Names of the components' objects. */}}
{{- define "sluice.etcd.fullname" -}}{{ include "sluice.fullname" . }}-etcd{{- end }}
{{- define "sluice.coordinator.fullname" -}}{{ include "sluice.fullname" . }}-coordinator{{- end }}
{{- define "sluice.node.fullname" -}}{{ include "sluice.fullname" . }}-node{{- end }}
{{- define "sluice.operator.fullname" -}}{{ include "sluice.fullname" . }}-operator{{- end }}

{{- define "sluice.serviceAccountName" -}}{{ include "sluice.fullname" . }}{{- end }}
{{- define "sluice.operator.serviceAccountName" -}}{{ include "sluice.operator.fullname" . }}{{- end }}

{{/* The coordinator address clients and the operator dial. */}}
{{- define "sluice.coordinator.address" -}}
{{- printf "%s.%s.svc:%d" (include "sluice.coordinator.fullname" .) .Release.Namespace (int .Values.coordinator.grpcPort) }}
{{- end }}

{{/* Comma-separated etcd client URLs: the chart's members or etcd.endpoints. */}}
{{- define "sluice.etcd.endpoints" -}}
{{- if .Values.etcd.enabled }}
{{- $urls := list }}
{{- $name := include "sluice.etcd.fullname" . }}
{{- range $i := until (int .Values.etcd.replicas) }}
{{- $urls = append $urls (printf "%s://%s-%d.%s-headless.%s.svc:%d" (include "sluice.scheme" $) $name $i $name $.Release.Namespace (int $.Values.etcd.clientPort)) }}
{{- end }}
{{- join "," $urls }}
{{- else }}
{{- required "etcd.endpoints is required when etcd.enabled is false" (join "," .Values.etcd.endpoints) }}
{{- end }}
{{- end }}

{{/* Preferred pod anti-affinity across Kubernetes nodes for one component. */}}
{{- define "sluice.softAntiAffinity" -}}
podAntiAffinity:
  preferredDuringSchedulingIgnoredDuringExecution:
    - weight: 100
      podAffinityTerm:
        topologyKey: kubernetes.io/hostname
        labelSelector:
          matchLabels:
            {{- include "sluice.selectorLabels" .root | nindent 12 }}
            app.kubernetes.io/component: {{ .component }}
{{- end }}

{{/* Volumes and mounts every Sluice container gets: a writable /tmp on a read-only root. */}}
{{- define "sluice.tmpVolume" -}}
- name: tmp
  emptyDir: {}
{{- end }}
{{- define "sluice.tmpMount" -}}
- name: tmp
  mountPath: /tmp
{{- end }}

{{/* http or https, as tls.enabled says. */}}
{{- define "sluice.scheme" -}}{{ if .Values.tls.enabled }}https{{ else }}http{{ end }}{{- end }}

{{/* Whether the coordinators authenticate callers: TLS and auth on. */}}
{{- define "sluice.auth" -}}{{ if and .Values.tls.enabled .Values.auth.enabled }}true{{ end }}{{- end }}

{{/* Secrets of the TLS material and API keys. */}}
{{- define "sluice.tls.secretName" -}}{{ include "sluice.fullname" . }}-tls{{- end }}
{{- define "sluice.etcd.tlsSecretName" -}}{{ include "sluice.fullname" . }}-etcd-tls{{- end }}
{{- define "sluice.ca.secretName" -}}{{ include "sluice.fullname" . }}-ca{{- end }}
{{- define "sluice.authKeys.secretName" -}}{{ include "sluice.fullname" . }}-auth-keys{{- end }}
{{- define "sluice.adminKey.secretName" -}}{{ include "sluice.fullname" . }}-admin-api-key{{- end }}
{{- define "sluice.operatorKey.secretName" -}}{{ include "sluice.fullname" . }}-operator-api-key{{- end }}

{{/*
The cluster certificate's names: the coordinator Service (clients, the
operator) and every data node's per-pod name (coordinators and nodes dial
them), in the short and the cluster.local forms; localhost for a process
calling itself.
*/}}
{{- define "sluice.tls.dnsNames" -}}
{{- $ns := .Release.Namespace }}
{{- $coord := include "sluice.coordinator.fullname" . }}
{{- $node := printf "%s-headless" (include "sluice.node.fullname" .) }}
{{- $names := list $coord (printf "%s.%s" $coord $ns) (printf "%s.%s.svc" $coord $ns) (printf "%s.%s.svc.cluster.local" $coord $ns) }}
{{- $names = concat $names (list (printf "*.%s.%s.svc" $node $ns) (printf "*.%s.%s.svc.cluster.local" $node $ns) "localhost") }}
{{- toJson (concat $names .Values.tls.extraDNSNames) }}
{{- end }}
{{- define "sluice.etcd.dnsNames" -}}
{{- $ns := .Release.Namespace }}
{{- $h := printf "%s-headless" (include "sluice.etcd.fullname" .) }}
{{- toJson (list (printf "*.%s.%s.svc" $h $ns) (printf "*.%s.%s.svc.cluster.local" $h $ns) (printf "%s.%s.svc" $h $ns) "localhost") }}
{{- end }}

{{/* TLS flags and volume of `sluice node` and `sluice coordinator`. */}}
{{- define "sluice.tlsArgs" -}}
{{- if .Values.tls.enabled -}}
- --cert-file=/etc/sluice/tls/tls.crt
- --key-file=/etc/sluice/tls/tls.key
- --trusted-ca-file=/etc/sluice/tls/ca.crt
{{- end }}
{{- end }}
{{- define "sluice.tlsMount" -}}
{{- if .Values.tls.enabled -}}
- name: tls
  mountPath: /etc/sluice/tls
  readOnly: true
{{- end }}
{{- end }}
{{- define "sluice.tlsVolume" -}}
{{- if .Values.tls.enabled -}}
- name: tls
  secret:
    secretName: {{ include "sluice.tls.secretName" . }}
{{- end }}
{{- end }}

{{/*
What a client of the public API (the operator, the test Pod) gets: the CA
certificate alone (never the cluster's key) and an API key from secret.
*/}}
{{- define "sluice.clientVolume" -}}
{{- if .Values.tls.enabled -}}
- name: ca
  secret:
    secretName: {{ include "sluice.tls.secretName" . }}
    items:
      - key: ca.crt
        path: ca.crt
{{- end }}
{{- end }}
{{- define "sluice.clientMount" -}}
{{- if .Values.tls.enabled -}}
- name: ca
  mountPath: /etc/sluice/ca
  readOnly: true
{{- end }}
{{- end }}
{{- define "sluice.clientEnv" -}}
{{- if .root.Values.tls.enabled -}}
- name: SLUICE_CACERT
  value: /etc/sluice/ca/ca.crt
{{- end }}
{{- if include "sluice.auth" .root }}
- name: SLUICE_API_KEY
  valueFrom:
    secretKeyRef:
      name: {{ .secret }}
      key: apiKey
{{- end }}
{{- end }}

{{/* gRPC probes of a Sluice process: its plaintext health port. */}}
{{- define "sluice.grpcProbe" -}}
grpc:
  port: {{ . }}
{{- end }}
