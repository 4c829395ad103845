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
{{- $urls = append $urls (printf "http://%s-%d.%s-headless.%s.svc:%d" $name $i $name $.Release.Namespace (int $.Values.etcd.clientPort)) }}
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
