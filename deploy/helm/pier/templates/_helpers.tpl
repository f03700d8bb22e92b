{{/* The release's name prefix of every object (at most 40 characters, so "-databases" and the Job's revision suffix fit 63). */}}
{{- define "pier.fullname" -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- end -}}

{{- define "pier.labels" -}}
app.kubernetes.io/name: pier
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ .Chart.Name }}-{{ .Chart.Version }}
{{- end -}}

{{/* Selector labels of one part: (dict "root" $ "part" "auth"). */}}
{{- define "pier.selector" -}}
app.kubernetes.io/name: pier
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .part }}
{{- end -}}

{{/*
A part's address: its Service's name, which the cluster DNS resolves through the pod's
search domain (<namespace>.svc.<cluster domain>): (dict "root" $ "part" "auth") gives
pier-auth for release "pier". A name, not a ClusterIP: a Service made again keeps it.
*/}}
{{- define "pier.host" -}}
{{ include "pier.fullname" .root }}-{{ .part }}
{{- end -}}

{{- define "pier.secretName" -}}
{{ include "pier.fullname" . }}-keys
{{- end -}}

{{/*
A password: the value given, else the one in the release's Secret (upgrades), else a new one
(`"apiKey" true`: an API key, sk- and 64 hex digits). Chosen once per render and kept in
.Values.__pierGenerated: the Secret and the pods' checksum of it render the same value, so
the first upgrade after an install does not roll every pod for a checksum that only moved.
*/}}
{{- define "pier.password" -}}
{{- $given := index .values .key -}}
{{- if $given -}}{{ $given }}{{- else -}}
{{- if not (hasKey .root.Values "__pierGenerated") -}}{{- $_ := set .root.Values "__pierGenerated" dict -}}{{- end -}}
{{- $cache := .root.Values.__pierGenerated -}}
{{- if not (hasKey $cache .secretKey) -}}
{{- $existing := lookup "v1" "Secret" .root.Release.Namespace (include "pier.secretName" .root) -}}
{{- if and $existing (index $existing.data .secretKey) -}}
{{- $_ := set $cache .secretKey (index $existing.data .secretKey | b64dec) -}}
{{- else if .apiKey -}}
{{- $_ := set $cache .secretKey (printf "sk-%s" (randAlphaNum 64 | sha256sum)) -}}
{{- else -}}
{{- $_ := set $cache .secretKey (randAlphaNum 32) -}}
{{- end -}}
{{- end -}}
{{- index $cache .secretKey -}}
{{- end -}}
{{- end -}}

{{/* PostgreSQL host:port as the pods see it. */}}
{{- define "pier.dbHostPort" -}}
{{- if .Values.postgres.enabled -}}
{{ include "pier.host" (dict "root" . "part" "postgres") }}:5432
{{- else -}}
{{ (urlParse (required "externalDatabase.adminUrl is required when postgres.enabled=false" .Values.externalDatabase.adminUrl)).host }}
{{- end -}}
{{- end -}}

{{/* The database name (path) and query of the database URLs. */}}
{{- define "pier.dbPathQuery" -}}
{{- if .Values.postgres.enabled -}}
/{{ .Values.postgres.database }}
{{- else -}}
{{- $u := urlParse .Values.externalDatabase.adminUrl -}}
{{ $u.path }}{{ if $u.query }}?{{ $u.query }}{{ end }}
{{- end -}}
{{- end -}}

{{/* Strings as a comma-separated list of quoted strings (NATS's configuration reads them; toJson would write > as \u003e). */}}
{{- define "pier.quotedList" -}}
{{- range $i, $s := . }}{{ if $i }}, {{ end }}{{ $s | quote }}{{ end -}}
{{- end -}}

{{- define "pier.natsUrl" -}}
{{- if .Values.nats.enabled -}}
nats://{{ include "pier.host" (dict "root" . "part" "nats") }}:4222
{{- else -}}
{{ required "externalNats.url is required when nats.enabled=false" .Values.externalNats.url }}
{{- end -}}
{{- end -}}

{{/* What every Pier container mounts: a writable /tmp (tsx's cache, HOME) on a read-only root. */}}
{{- define "pier.tmpMount" -}}
- name: tmp
  mountPath: /tmp
{{- end -}}
