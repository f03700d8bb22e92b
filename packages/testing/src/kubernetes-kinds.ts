import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv, type ValidateFunction } from 'ajv';
import yaml from 'js-yaml';
import { Namespace, PersistentVolumeClaim, Pod, Secret, Service, ServiceAccount } from 'kubernetes-models/v1';
import { Deployment, StatefulSet } from 'kubernetes-models/apps/v1';
import { CronJob, Job } from 'kubernetes-models/batch/v1';
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2';
import { Ingress, NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1';
import { EndpointSlice } from 'kubernetes-models/discovery.k8s.io/v1';

// The kinds the fake Kubernetes API serves, and what the real API server would refuse of
// each: core kinds checked with kubernetes-models (the Kubernetes OpenAPI schemas), custom
// resources with ajv against the operators' CRD schemas in deploy/crds, both plus the
// API server's own name, label, env and Secret rules that the schemas do not carry.

type Obj = Record<string, any>;

export interface KindInfo {
  apiVersion: string;
  kind: string;
  plural: string;
  namespaced: boolean;
  /** Throws unless `body` is an object of this kind the API server would accept. */
  validate(body: Obj): void;
}

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const DNS1035_LABEL = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;
const QUALIFIED_NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const ENV_NAME = /^[-._a-zA-Z][-._a-zA-Z0-9]*$/;
const SECRET_KEY = /^[-._a-zA-Z0-9]+$/;

/** The API server's name rules: each kind's, as its validation declares them. */
const NAME_RULES = {
  label: { pattern: DNS1123_LABEL, max: 63, what: 'a DNS-1123 label' },
  /** Services become DNS names: a leading digit is refused too. */
  label1035: { pattern: DNS1035_LABEL, max: 63, what: 'a DNS-1035 label' },
  subdomain: { pattern: DNS1123_SUBDOMAIN, max: 253, what: 'a DNS-1123 subdomain' },
  /** A Job's name is also its pods' `job-name` label value. */
  job: { pattern: DNS1123_SUBDOMAIN, max: 63, what: 'a DNS-1123 subdomain of at most 63 characters' },
  /** The CronJob controller appends an 11-character suffix for its Jobs. */
  cronJob: { pattern: DNS1123_SUBDOMAIN, max: 52, what: 'a DNS-1123 subdomain of at most 52 characters' },
} as const;
type NameRule = keyof typeof NAME_RULES;

function checkName(kind: string, name: unknown, rule: NameRule): void {
  const r = NAME_RULES[rule];
  if (typeof name !== 'string' || !r.pattern.test(name) || name.length > r.max) throw new Error(`${kind} name "${String(name)}" is not ${r.what}`);
}

function checkQualifiedKey(key: string, what: string): void {
  const [prefix, name] = key.includes('/') ? key.split('/', 2) : [undefined, key];
  if (prefix !== undefined && (!DNS1123_SUBDOMAIN.test(prefix) || prefix.length > 253)) throw new Error(`bad ${what} prefix ${key}`);
  if (!QUALIFIED_NAME.test(name!) || name!.length > 63) throw new Error(`bad ${what} name ${key}`);
}

/** Every label set a kind carries (its own, its pod templates') and every container it runs. */
function labelSets(body: Obj): (Record<string, unknown> | undefined)[] {
  return [
    body.metadata?.labels,
    body.spec?.template?.metadata?.labels,
    body.spec?.jobTemplate?.metadata?.labels,
    body.spec?.jobTemplate?.spec?.template?.metadata?.labels,
  ];
}

function podSpecOf(body: Obj): Obj | undefined {
  return body.spec?.template?.spec ?? body.spec?.jobTemplate?.spec?.template?.spec ?? (body.kind === 'Pod' ? body.spec : undefined);
}

/** The object-meta and pod rules every core kind shares. */
function checkObject(body: Obj): void {
  for (const labels of labelSets(body)) {
    for (const [k, v] of Object.entries(labels ?? {})) {
      checkQualifiedKey(k, 'label');
      if (typeof v !== 'string' || !LABEL_VALUE.test(v) || v.length > 63) throw new Error(`bad label value ${k}=${String(v)}`);
    }
  }
  for (const k of Object.keys(body.metadata?.annotations ?? {})) checkQualifiedKey(k, 'annotation');
  const pod = podSpecOf(body);
  for (const c of [...(pod?.initContainers ?? []), ...(pod?.containers ?? [])] as Obj[]) {
    for (const e of c.env ?? []) if (!ENV_NAME.test(e.name)) throw new Error(`bad env name ${e.name}`);
  }
}

type ModelClass = new (data: never) => { validate(): void };

/** A core kind: kubernetes-models' schema, its name rule, the shared rules, and any of its own. */
function core(
  apiVersion: string,
  kind: string,
  plural: string,
  namespaced: boolean,
  model: ModelClass,
  nameRule: NameRule,
  extra?: (body: Obj) => void,
): KindInfo {
  return {
    apiVersion,
    kind,
    plural,
    namespaced,
    validate(body) {
      new model(body as never).validate();
      checkName(kind, body.metadata?.name, nameRule);
      checkObject(body);
      extra?.(body);
    },
  };
}

function checkSecret(body: Obj): void {
  let size = 0;
  for (const [k, v] of Object.entries({ ...(body.data ?? {}), ...(body.stringData ?? {}) })) {
    if (!SECRET_KEY.test(k) || k.length > 253) throw new Error(`bad Secret data key ${k}`);
    size += Buffer.byteLength(String(v));
  }
  if (size > 1024 * 1024) throw new Error('Secret larger than 1 MiB');
}

function checkDeployment(body: Obj): void {
  const selector = body.spec?.selector?.matchLabels ?? {};
  const labels = body.spec?.template?.metadata?.labels ?? {};
  if (!Object.entries(selector).every(([k, v]) => labels[k] === v)) throw new Error('selector does not match template labels');
}

// ---------- custom resources ----------

/** The operators' CRDs, kept in the repository with their versions and sources (deploy/crds/README.md). */
export const CRDS_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../deploy/crds');

/**
 * The API server prunes fields a structural schema does not declare; validating with
 * additionalProperties: false instead makes a misspelt field an error here rather than
 * a setting silently dropped there.
 */
function closeObjects(schema: Obj): Obj {
  if (Array.isArray(schema)) return schema.map(closeObjects);
  if (!schema || typeof schema !== 'object') return schema;
  const out: Obj = {};
  for (const [k, v] of Object.entries(schema))
    out[k] = k === 'properties' ? Object.fromEntries(Object.entries(v as Obj).map(([p, s]) => [p, closeObjects(s as Obj)])) : closeObjects(v as Obj);
  // ajv's `nullable` needs a `type`; untyped nodes (int-or-string) accept anything anyway.
  if (out.nullable !== undefined && out.type === undefined) delete out.nullable;
  if (out.type === 'object' && out.properties && out.additionalProperties === undefined && !out['x-kubernetes-preserve-unknown-fields']) {
    out.additionalProperties = false;
  }
  return out;
}

const ajv = new Ajv({ strict: false, allErrors: true, validateFormats: false });

/**
 * A custom resource validated against its CRD's schema. Compiled on first use: the CRDs
 * are large, and most fakes never see one. Names are DNS labels because the operators
 * derive Service names from them (`<cluster>-rw`, `moco-<cluster>-primary`).
 */
function custom(apiVersion: string, kind: string, plural: string, file: string): KindInfo {
  let compiled: ValidateFunction | undefined;
  const schema = () => {
    if (!compiled) {
      const crd = yaml.load(readFileSync(path.join(CRDS_DIR, file), 'utf8')) as Obj;
      const version = crd.spec.versions.find((x: Obj) => x.name === apiVersion.split('/')[1]);
      const s = closeObjects(version.schema.openAPIV3Schema);
      // metadata is free-form in a CRD schema; the API server checks it (as for core kinds).
      s.properties.metadata = { type: 'object' };
      compiled = ajv.compile(s);
    }
    return compiled;
  };
  return {
    apiVersion,
    kind,
    plural,
    namespaced: true,
    validate(body) {
      const validate = schema();
      if (!validate(body)) throw new Error(ajv.errorsText(validate.errors, { separator: '; ' }));
      checkName(kind, body.metadata?.name, 'label');
      checkObject(body);
    },
  };
}

export const KINDS: KindInfo[] = [
  core('v1', 'Namespace', 'namespaces', false, Namespace, 'label'),
  core('v1', 'Pod', 'pods', true, Pod, 'subdomain'),
  core('v1', 'Service', 'services', true, Service, 'label1035'),
  core('v1', 'PersistentVolumeClaim', 'persistentvolumeclaims', true, PersistentVolumeClaim, 'subdomain'),
  core('v1', 'Secret', 'secrets', true, Secret, 'subdomain', checkSecret),
  core('v1', 'ServiceAccount', 'serviceaccounts', true, ServiceAccount, 'subdomain'),
  core('apps/v1', 'Deployment', 'deployments', true, Deployment, 'subdomain', checkDeployment),
  core('apps/v1', 'StatefulSet', 'statefulsets', true, StatefulSet, 'subdomain'),
  core('batch/v1', 'Job', 'jobs', true, Job, 'job'),
  core('batch/v1', 'CronJob', 'cronjobs', true, CronJob, 'cronJob'),
  core('autoscaling/v2', 'HorizontalPodAutoscaler', 'horizontalpodautoscalers', true, HorizontalPodAutoscaler, 'subdomain'),
  core('networking.k8s.io/v1', 'NetworkPolicy', 'networkpolicies', true, NetworkPolicy, 'subdomain'),
  core('networking.k8s.io/v1', 'Ingress', 'ingresses', true, Ingress, 'subdomain'),
  core('discovery.k8s.io/v1', 'EndpointSlice', 'endpointslices', true, EndpointSlice, 'subdomain'),
  custom('postgresql.cnpg.io/v1', 'Cluster', 'clusters', 'cloudnative-pg/postgresql.cnpg.io_clusters.yaml'),
  custom('postgresql.cnpg.io/v1', 'Pooler', 'poolers', 'cloudnative-pg/postgresql.cnpg.io_poolers.yaml'),
  custom('postgresql.cnpg.io/v1', 'Backup', 'backups', 'cloudnative-pg/postgresql.cnpg.io_backups.yaml'),
  custom('moco.cybozu.com/v1beta2', 'MySQLCluster', 'mysqlclusters', 'moco/moco.cybozu.com_mysqlclusters.yaml'),
  custom('moco.cybozu.com/v1beta2', 'BackupPolicy', 'backuppolicies', 'moco/moco.cybozu.com_backuppolicies.yaml'),
  custom('snapshot.storage.k8s.io/v1', 'VolumeSnapshot', 'volumesnapshots', 'external-snapshotter-v8.7.0/snapshot.storage.k8s.io_volumesnapshots.yaml'),
  custom('cert-manager.io/v1', 'Certificate', 'certificates', 'cert-manager-v1.21.2/cert-manager.io_certificates.yaml'),
];

/** Throws unless `body` is an object of a known kind that the API server would accept. */
export function validateManifest(body: unknown): void {
  const o = body as Obj | undefined;
  const info = KINDS.find((k) => k.apiVersion === o?.apiVersion && k.kind === o?.kind);
  if (!info) throw new Error(`unknown kind ${o?.apiVersion}/${o?.kind}`);
  info.validate(o!);
}
