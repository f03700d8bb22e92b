{{/* Each part's environment beyond the ConfigMap. (dict "root" $ "part" "auth") */}}

{{- define "pier.env.db" -}}
- name: PIER_DB_PASSWORD
  valueFrom: {secretKeyRef: {name: {{ include "pier.secretName" .root }}, key: {{ .part }}-database-password}}
- name: PIER_DATABASE_URL
  value: "postgres://pier_{{ .part }}:$(PIER_DB_PASSWORD)@{{ include "pier.dbHostPort" .root }}{{ include "pier.dbPathQuery" .root }}"
{{ include "pier.env.nats" . }}
- name: PIER_IDENTITY_PUBLIC_KEY
  valueFrom: {secretKeyRef: {name: {{ include "pier.secretName" .root }}, key: identity-public-key}}
{{- end -}}

{{/* NATS: the URL, and with the chart's own server the part's user and password. */}}
{{- define "pier.env.nats" -}}
- name: PIER_NATS_URL
  value: {{ include "pier.natsUrl" .root | quote }}
{{- if .root.Values.nats.enabled }}
- {name: PIER_NATS_USER, value: {{ .part | quote }}}
- name: PIER_NATS_PASSWORD
  valueFrom: {secretKeyRef: {name: {{ include "pier.secretName" .root }}, key: {{ .part }}-nats-password}}
{{- end }}
{{- end -}}

{{- define "pier.url" -}}
http://{{ include "pier.host" (dict "root" .root "part" .part) }}:{{ .port }}
{{- end -}}

{{- define "pier.env.auth" -}}
{{ include "pier.env.db" . }}
- name: PIER_IDENTITY_PRIVATE_KEY
  valueFrom: {secretKeyRef: {name: {{ include "pier.secretName" .root }}, key: identity-private-key}}
- name: PIER_GATEWAY_SERVICE_PUBLIC_KEY
  valueFrom: {secretKeyRef: {name: {{ include "pier.secretName" .root }}, key: gateway-public-key}}
- {name: PIER_AUTH_HTTP_PORT, value: "7101"}
- {name: PIER_AUTH_GRPC_PORT, value: "7111"}
- name: PIER_PUBLIC_URL
  value: {{ .root.Values.publicUrl | default (include "pier.url" (dict "root" .root "part" "gateway" "port" 7100)) | quote }}
- {name: PIER_COMPUTE_URL, value: {{ include "pier.url" (dict "root" .root "part" "compute" "port" 7102) | quote }}}
- {name: PIER_DATABASES_URL, value: {{ include "pier.url" (dict "root" .root "part" "databases" "port" 7103) | quote }}}
- {name: PIER_SECRETS_URL, value: {{ include "pier.url" (dict "root" .root "part" "secrets" "port" 7104) | quote }}}
- {name: PIER_BOOTSTRAP, value: {{ .root.Values.bootstrap.enabled | toString | quote }}}
- {name: PIER_BOOTSTRAP_EMAIL, value: {{ .root.Values.bootstrap.email | quote }}}
{{- if .root.Values.bootstrap.enabled }}
- name: PIER_BOOTSTRAP_API_KEY
  valueFrom: {secretKeyRef: {name: {{ include "pier.secretName" .root }}, key: bootstrap-api-key}}
{{- end }}
- {name: PIER_CONFIG_DIR, value: /var/lib/pier/bootstrap}
{{- end -}}

{{- define "pier.env.compute" -}}
{{ include "pier.env.db" . }}
- {name: PIER_COMPUTE_HTTP_PORT, value: "7102"}
{{- /* The activator (on_demand services' sleep and wake) listens on the pod's own address; the ingress controller reaches it there. */}}
- name: PIER_COMPUTE_ACTIVATOR_ADDRESS
  valueFrom: {fieldRef: {fieldPath: status.podIP}}
- {name: PIER_COMPUTE_ACTIVATOR_PORT, value: "7122"}
- {name: PIER_SECRETS_GRPC_URL, value: "{{ include "pier.host" (dict "root" .root "part" "secrets") }}:7114"}
- name: PIER_COMPUTE_SERVICE_PRIVATE_KEY
  valueFrom: {secretKeyRef: {name: {{ include "pier.secretName" .root }}, key: compute-private-key}}
{{- with .root.Values.compute.ingressMetricsUrls }}
- {name: PIER_COMPUTE_INGRESS_METRICS_URLS, value: {{ . | quote }}}
{{- end }}
{{- end -}}

{{- define "pier.env.databases" -}}
{{ include "pier.env.db" . }}
- {name: PIER_DATABASES_HTTP_PORT, value: "7103"}
- {name: PIER_AUTH_GRPC_URL, value: "{{ include "pier.host" (dict "root" .root "part" "auth") }}:7111"}
{{- with .root.Values.databases.storageClass }}
- {name: PIER_DATABASES_STORAGE_CLASS, value: {{ . | quote }}}
{{- end }}
{{- with .root.Values.databases.operator }}
- {name: PIER_DATABASES_KUBERNETES_OPERATOR, value: {{ . | quote }}}
{{- end }}
- {name: PIER_DATABASES_POSTGRES_IMAGE, value: {{ .root.Values.databases.postgresImage | quote }}}
- {name: PIER_DATABASES_MYSQL_IMAGE, value: {{ .root.Values.databases.mysqlImage | quote }}}
- {name: PIER_DATABASES_KUBERNETES_EXTERNAL_SERVICE, value: {{ .root.Values.databases.externalService | quote }}}
{{- with .root.Values.databases.clusterNetworks }}
- {name: PIER_DATABASES_KUBERNETES_CLUSTER_NETWORKS, value: {{ . | quote }}}
{{- end }}
{{- end -}}

{{- define "pier.env.secrets" -}}
{{ include "pier.env.db" . }}
- {name: PIER_SECRETS_HTTP_PORT, value: "7104"}
- {name: PIER_SECRETS_GRPC_PORT, value: "7114"}
- name: PIER_COMPUTE_SERVICE_PUBLIC_KEY
  valueFrom: {secretKeyRef: {name: {{ include "pier.secretName" .root }}, key: compute-public-key}}
{{- end -}}

{{- define "pier.env.events" -}}
{{ include "pier.env.db" . }}
- {name: PIER_EVENTS_HTTP_PORT, value: "7105"}
- {name: PIER_EVENTS_RETENTION_DAYS, value: {{ .root.Values.events.retentionDays | quote }}}
{{- end -}}

{{- define "pier.env.gateway" -}}
- {name: PIER_GATEWAY_PORT, value: "7100"}
- {name: PIER_GATEWAY_METRICS_PORT, value: "7109"}
- {name: PIER_AUTH_GRPC_URL, value: "{{ include "pier.host" (dict "root" .root "part" "auth") }}:7111"}
- {name: PIER_AUTH_URL, value: {{ include "pier.url" (dict "root" .root "part" "auth" "port" 7101) | quote }}}
- {name: PIER_COMPUTE_URL, value: {{ include "pier.url" (dict "root" .root "part" "compute" "port" 7102) | quote }}}
- {name: PIER_DATABASES_URL, value: {{ include "pier.url" (dict "root" .root "part" "databases" "port" 7103) | quote }}}
- {name: PIER_SECRETS_URL, value: {{ include "pier.url" (dict "root" .root "part" "secrets" "port" 7104) | quote }}}
- {name: PIER_EVENTS_URL, value: {{ include "pier.url" (dict "root" .root "part" "events" "port" 7105) | quote }}}
- name: PIER_GATEWAY_SERVICE_PRIVATE_KEY
  valueFrom: {secretKeyRef: {name: {{ include "pier.secretName" .root }}, key: gateway-private-key}}
{{ include "pier.env.nats" . }}
{{- with .root.Values.gateway.rateLimit }}
{{- if .tokenPerHour }}
- {name: PIER_RATE_LIMIT_TOKEN_PER_HOUR, value: {{ .tokenPerHour | quote }}}
{{- end }}
{{- if .tokenBurst }}
- {name: PIER_RATE_LIMIT_TOKEN_BURST, value: {{ .tokenBurst | quote }}}
{{- end }}
{{- if .addressPerHour }}
- {name: PIER_RATE_LIMIT_ADDRESS_PER_HOUR, value: {{ .addressPerHour | quote }}}
{{- end }}
{{- if .addressBurst }}
- {name: PIER_RATE_LIMIT_ADDRESS_BURST, value: {{ .addressBurst | quote }}}
{{- end }}
{{- end }}
{{- end -}}
