{{/* The name of every object; the binary's webhook registration names the Service so. */}}
{{- define "name" -}}
gardener-extension-firewall
{{- end -}}

{{- define "labels.selector" -}}
app.kubernetes.io/name: {{ include "name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "labels" -}}
{{ include "labels.selector" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ .Chart.Name }}-{{ .Chart.Version }}
{{- end -}}

{{/* The seed API server settings for this seed: seeds.<gardener.seed.name> over the defaults. */}}
{{- define "seedAPIServer.seed" -}}
{{- $name := dig "seed" "name" "" (.Values.gardener | default dict) -}}
{{- index (.Values.seedAPIServer.seeds | default dict) $name | default dict | toJson -}}
{{- end -}}

{{- define "seedAPIServer.url" -}}
{{- $seed := include "seedAPIServer.seed" . | fromJson -}}
{{- required "seedAPIServer.url (or seedAPIServer.seeds.<seed name>.url) is required: the seed's kube-apiserver URL as firewalls reach it" ($seed.url | default .Values.seedAPIServer.url) -}}
{{- end -}}

{{- define "seedAPIServer.caBundle" -}}
{{- $seed := include "seedAPIServer.seed" . | fromJson -}}
{{- $seed.caBundle | default .Values.seedAPIServer.caBundle -}}
{{- end -}}

{{- define "leaderElectionID" -}}
gardener-extension-firewall-leader-election
{{- end -}}

{{- define "webhookCertDir" -}}
/tmp/gardener-extension-firewall/webhook-certs
{{- end -}}

{{- define "seedCADir" -}}
/etc/gardener-extension-firewall/seed-ca
{{- end -}}

{{- define "metalAPIDir" -}}
/etc/gardener-extension-firewall/metal-api
{{- end -}}

{{- define "agentUpdateKeyDir" -}}
/etc/gardener-extension-firewall/agent-update-key
{{- end -}}

{{/* The Secret with the metal-api HMAC key: the chart's own when the key is a value. */}}
{{- define "metalAPISecretName" -}}
{{- if .Values.machineProvider.metal.hmac -}}
{{ include "name" . }}-metal-api
{{- else -}}
{{ .Values.machineProvider.metal.existingSecret.name | default (printf "%s-metal-api" (include "name" .)) }}
{{- end -}}
{{- end -}}

{{- define "metalAPISecretKey" -}}
{{- if .Values.machineProvider.metal.hmac -}}
hmac
{{- else -}}
{{ .Values.machineProvider.metal.existingSecret.key | default "hmac" }}
{{- end -}}
{{- end -}}
