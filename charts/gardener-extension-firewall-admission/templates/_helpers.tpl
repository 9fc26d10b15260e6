{{- define "name" -}}
gardener-extension-firewall-admission
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

{{/* The runtime part (Deployment, Service, Secret): not in gardener-operator's virtual-garden rendering. */}}
{{- define "renderRuntime" -}}
{{- if or (dig "runtimeCluster" nil (.Values.gardener | default dict)) (not (dig "virtualCluster" "enabled" false (.Values.gardener | default dict))) -}}
true
{{- end -}}
{{- end -}}

{{/* The webhook registration: not in gardener-operator's runtime-cluster rendering. */}}
{{- define "renderWebhook" -}}
{{- if not (dig "runtimeCluster" nil (.Values.gardener | default dict)) -}}
true
{{- end -}}
{{- end -}}

{{- define "certDir" -}}
/etc/gardener-extension-firewall-admission/tls
{{- end -}}

{{- define "tlsSecretName" -}}
{{ .Values.tls.existingSecret | default (printf "%s-tls" (include "name" .)) }}
{{- end -}}
