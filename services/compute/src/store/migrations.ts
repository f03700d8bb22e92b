import { createIdempotencyTable, createLeasesTable, createOutboxTable, type Migration } from '@pier/kit';

export const SCHEMA = 'compute';

export const migrations: Migration[] = [
  {
    name: '0001_outbox',
    up: (db) => createOutboxTable(db),
    down: (db) => db.schema.dropTable('outbox'),
  },
  {
    name: '0002_services',
    // created_at is kept to the millisecond: it is half of the list cursor, and a cursor
    // carried through a JavaScript Date must compare equal to the row it came from.
    async up(db) {
      await db.schema.createTable('services', (t) => {
        t.uuid('id').primary().defaultTo(db.raw('gen_random_uuid()'));
        t.uuid('workspace_id').notNullable();
        t.uuid('vpc_id').notNullable();
        t.text('name').notNullable();
        t.text('service_type').notNullable();
        t.text('instance_type').notNullable();
        t.text('deployment_mode').notNullable();
        t.text('image');
        t.integer('port');
        t.text('health_check_path');
        t.integer('min_replicas').notNullable();
        t.integer('max_replicas');
        t.text('cron_schedule');
        t.integer('disk_size_gb');
        t.text('disk_mount_path');
        t.jsonb('command');
        t.jsonb('args');
        t.integer('run_as_user').notNullable();
        t.text('status').notNullable();
        t.text('status_message');
        // False until the cluster accepted the service: a row a crash left pending is
        // found at start-up and finished (its cluster objects removed, the row dropped).
        t.boolean('provisioned').notNullable().defaultTo(false);
        t.uuid('current_deployment_id');
        t.timestamp('created_at', { useTz: true, precision: 3 }).notNullable().defaultTo(db.fn.now());
        t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
        t.timestamp('deleted_at', { useTz: true });
        t.index(['vpc_id', 'created_at', 'id']);
        t.index(['status']);
      });
      // A deleted service frees its name.
      await db.raw('create unique index services_vpc_name_live on services (vpc_id, name) where deleted_at is null');

      await db.schema.createTable('deployments', (t) => {
        t.uuid('id').primary().defaultTo(db.raw('gen_random_uuid()'));
        t.uuid('service_id').notNullable().references('id').inTable('services').onDelete('CASCADE');
        t.text('image').notNullable();
        t.text('reason').notNullable();
        t.uuid('rollback_of');
        // pending (not yet accepted by the cluster) | deploying | succeeded | failed | superseded
        t.text('status').notNullable();
        t.text('message');
        // False when it failed before reaching the cluster (a missing secret).
        t.boolean('applied').notNullable().defaultTo(false);
        // What the rollout ran, so a pending one can be finished after a crash: the service
        // configuration and the environment as literals and secret references (never values).
        t.jsonb('config').notNullable();
        t.jsonb('env').notNullable();
        t.timestamp('created_at', { useTz: true, precision: 3 }).notNullable().defaultTo(db.fn.now());
        t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
        t.timestamp('finished_at', { useTz: true });
        t.index(['service_id', 'created_at', 'id']);
        t.index(['status']);
      });

      await db.schema.createTable('env_vars', (t) => {
        t.uuid('id').primary().defaultTo(db.raw('gen_random_uuid()'));
        t.uuid('service_id').notNullable().references('id').inTable('services').onDelete('CASCADE');
        t.text('key').notNullable();
        t.integer('position').notNullable();
        // Exactly one of: a literal value, or a reference to (secret_id, secret_key).
        t.text('value');
        t.uuid('secret_id');
        t.text('secret_key');
        t.timestamp('created_at', { useTz: true, precision: 3 }).notNullable().defaultTo(db.fn.now());
        t.unique(['service_id', 'key']);
      });
      await db.raw(`alter table env_vars add constraint env_vars_literal_or_reference check (
        (value is not null and secret_id is null and secret_key is null) or
        (value is null and secret_id is not null and secret_key is not null))`);
    },
    async down(db) {
      await db.schema.dropTable('env_vars');
      await db.schema.dropTable('deployments');
      await db.schema.dropTable('services');
    },
  },
  {
    name: '0006_builds',
    // Builds are a queue (oldest queued first, per workspace) and a history (newest first
    // per service); their logs are chunks in order, read whole or followed from a sequence.
    async up(db) {
      await db.schema.createTable('builds', (t) => {
        t.uuid('id').primary().defaultTo(db.raw('gen_random_uuid()'));
        t.uuid('service_id').notNullable().references('id').inTable('services').onDelete('CASCADE');
        t.uuid('workspace_id').notNullable();
        t.uuid('vpc_id').notNullable();
        t.text('source').notNullable();
        // queued | running | succeeded | failed | cancelled
        t.text('status').notNullable();
        t.text('repo_url');
        t.text('ref');
        t.text('commit_sha');
        t.text('dockerfile_path').notNullable();
        t.text('context_dir').notNullable();
        t.text('image');
        t.boolean('deploy').notNullable();
        t.uuid('deployment_id');
        t.text('error');
        t.boolean('cancel_requested').notNullable().defaultTo(false);
        t.integer('log_bytes').notNullable().defaultTo(0);
        t.timestamp('created_at', { useTz: true, precision: 3 }).notNullable().defaultTo(db.fn.now());
        t.timestamp('started_at', { useTz: true });
        t.timestamp('finished_at', { useTz: true });
        t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
        t.index(['service_id', 'created_at', 'id']);
      });
      await db.raw("create index builds_unfinished on builds (status, created_at) where status in ('queued', 'running')");
      await db.schema.createTable('build_logs', (t) => {
        t.uuid('build_id').notNullable().references('id').inTable('builds').onDelete('CASCADE');
        t.integer('seq').notNullable();
        t.text('text').notNullable();
        t.primary(['build_id', 'seq']);
      });
    },
    async down(db) {
      await db.schema.dropTable('build_logs');
      await db.schema.dropTable('builds');
    },
  },
  {
    name: '0005_logs',
    // Service log history: a row per line, partitioned by day on its timestamp (store/
    // log-store.ts creates the days ahead and drops the ones past retention); each day's
    // index (service_id, ts, seq) serves a service's time range in order. `seq` orders lines
    // of one microsecond. log_cursors: how far collection got in each replica's output.
    async up(db) {
      await db.raw('create sequence log_lines_seq cache 100');
      await db.raw(`create table log_lines (
        service_id uuid not null,
        ts timestamptz not null,
        seq bigint not null default nextval('log_lines_seq'),
        deployment_id uuid,
        replica text not null,
        stream text not null check (stream in ('stdout', 'stderr')),
        message text not null
      ) partition by range (ts)`);
      await db.raw('alter sequence log_lines_seq owned by log_lines.seq');
      await db.raw('create index log_lines_range on log_lines (service_id, ts, seq)');
      await db.schema.createTable('log_cursors', (t) => {
        t.text('key').primary();
        t.uuid('service_id').notNullable();
        // The newest line stored, RFC 3339 with nine fraction digits (finer than timestamptz).
        t.text('ts').notNullable();
        t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
        t.index(['ts']);
      });
    },
    async down(db) {
      await db.schema.dropTable('log_cursors');
      // Its day partitions and its sequence go with it.
      await db.raw('drop table log_lines');
    },
  },
  {
    name: '0007_domains',
    // Custom domains. A hostname is unique across the platform (no workspace can take over
    // another's domain); `routed` says the edge routes it, whatever its TLS stage.
    async up(db) {
      await db.schema.createTable('domains', (t) => {
        t.uuid('id').primary().defaultTo(db.raw('gen_random_uuid()'));
        t.uuid('workspace_id').notNullable();
        t.uuid('vpc_id').notNullable();
        t.uuid('service_id').notNullable().references('id').inTable('services').onDelete('CASCADE');
        t.text('hostname').notNullable().unique();
        // pending | verified | active | failed
        t.text('status').notNullable().defaultTo('pending');
        t.text('verification_token').notNullable();
        t.boolean('routed').notNullable().defaultTo(false);
        // pending | issued | failed
        t.text('tls_status').notNullable().defaultTo('pending');
        t.text('tls_issuer');
        t.timestamp('tls_expires_at', { useTz: true });
        t.text('tls_error');
        t.text('error');
        t.timestamp('last_checked_at', { useTz: true });
        t.timestamp('created_at', { useTz: true, precision: 3 }).notNullable().defaultTo(db.fn.now());
        t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
        t.index(['service_id', 'created_at', 'id']);
      });
      await db.raw('create index domains_routed on domains (tls_expires_at) where routed');
    },
    down: (db) => db.schema.dropTable('domains'),
  },
  {
    name: '0008_uptime',
    // Uptime monitors (one per service), their checks counted per hour (what uptime_24h and
    // uptime_7d read, kept for the retention), and their incidents (at most one open).
    // next_check_at is the work queue: claiming a check moves it one interval on.
    async up(db) {
      await db.schema.createTable('uptime_monitors', (t) => {
        t.uuid('service_id').primary().references('id').inTable('services').onDelete('CASCADE');
        t.text('path').notNullable();
        t.integer('interval_seconds').notNullable();
        t.integer('timeout_ms').notNullable();
        t.integer('expected_min').notNullable();
        t.integer('expected_max').notNullable();
        t.integer('generation').notNullable().defaultTo(1);
        // up | down | unknown
        t.text('status').notNullable().defaultTo('unknown');
        t.integer('consecutive_failures').notNullable().defaultTo(0);
        t.timestamp('failing_since', { useTz: true });
        t.timestamp('last_checked_at', { useTz: true });
        t.integer('last_status_code');
        t.integer('last_latency_ms');
        t.text('last_error');
        t.timestamp('status_changed_at', { useTz: true });
        t.timestamp('next_check_at', { useTz: true }).notNullable();
        t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
        t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
        t.index(['next_check_at']);
      });
      await db.schema.createTable('uptime_counts', (t) => {
        t.uuid('service_id').notNullable().references('service_id').inTable('uptime_monitors').onDelete('CASCADE');
        t.timestamp('hour', { useTz: true }).notNullable();
        t.integer('checks').notNullable();
        t.integer('ok').notNullable();
        t.primary(['service_id', 'hour']);
        t.index(['hour']);
      });
      await db.schema.createTable('uptime_incidents', (t) => {
        t.uuid('id').primary().defaultTo(db.raw('gen_random_uuid()'));
        t.uuid('service_id').notNullable().references('service_id').inTable('uptime_monitors').onDelete('CASCADE');
        t.timestamp('started_at', { useTz: true }).notNullable();
        t.timestamp('ended_at', { useTz: true });
        t.text('reason').notNullable();
        t.index(['service_id', 'started_at']);
      });
      await db.raw('create unique index uptime_incidents_one_open on uptime_incidents (service_id) where ended_at is null');
    },
    async down(db) {
      await db.schema.dropTable('uptime_incidents');
      await db.schema.dropTable('uptime_counts');
      await db.schema.dropTable('uptime_monitors');
    },
  },
  {
    name: '0009_disk_backups',
    // Disk backups of services with a disk (one running per service), the restores (one
    // running per service; a restore a crash cut short is resumed from its step), and the
    // schedules (next_run_at is the work queue). services.disk_volume: the volume (docker)
    // or claim (kubernetes) holding the disk since a restore; null, the one it was created with.
    async up(db) {
      await db.schema.alterTable('services', (t) => {
        t.text('disk_volume');
      });
      await db.schema.createTable('disk_backups', (t) => {
        t.uuid('id').primary().defaultTo(db.raw('gen_random_uuid()'));
        t.uuid('service_id').notNullable().references('id').inTable('services').onDelete('CASCADE');
        // running | completed | failed
        t.text('status').notNullable();
        // manual | scheduled
        t.text('method').notNullable();
        t.bigInteger('size_bytes');
        t.text('error');
        t.timestamp('created_at', { useTz: true, precision: 3 }).notNullable().defaultTo(db.fn.now());
        t.timestamp('completed_at', { useTz: true });
        t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
        t.index(['service_id', 'created_at', 'id']);
      });
      await db.raw("create unique index disk_backups_one_running on disk_backups (service_id) where status = 'running'");
      await db.schema.createTable('disk_restores', (t) => {
        t.uuid('id').primary();
        t.uuid('service_id').notNullable().references('id').inTable('services').onDelete('CASCADE');
        // No foreign key: the record of a restore outlives the backup it restored.
        t.uuid('backup_id').notNullable();
        // running | completed | failed
        t.text('status').notNullable();
        // preparing | switched
        t.text('step').notNullable();
        t.text('from_volume');
        t.text('to_volume').notNullable();
        t.text('error');
        t.timestamp('created_at', { useTz: true, precision: 3 }).notNullable().defaultTo(db.fn.now());
        t.timestamp('finished_at', { useTz: true });
        t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
        t.index(['service_id', 'created_at']);
      });
      await db.raw("create unique index disk_restores_one_running on disk_restores (service_id) where status = 'running'");
      await db.schema.createTable('disk_backup_schedules', (t) => {
        t.uuid('service_id').primary().references('id').inTable('services').onDelete('CASCADE');
        t.text('schedule').notNullable();
        t.integer('retention_count').notNullable();
        t.timestamp('next_run_at', { useTz: true }).notNullable();
        t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
        t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
        t.index(['next_run_at']);
      });
    },
    async down(db) {
      await db.schema.dropTable('disk_backup_schedules');
      await db.schema.dropTable('disk_restores');
      await db.schema.dropTable('disk_backups');
      await db.schema.alterTable('services', (t) => {
        t.dropColumn('disk_volume');
      });
    },
  },
  {
    name: '0010_idempotency_keys',
    up: (db) => createIdempotencyTable(db),
    down: (db) => db.schema.dropTable('idempotency_keys'),
  },
  {
    name: '0011_domain_claims',
    // Only a verified domain holds its hostname (a partial unique index, so two verifications
    // racing cannot both win); unverified claims of one hostname coexist, one per service, and
    // lapse at claim_expires_at. Domains verified before this migration keep their hostname;
    // the others get the default seven days from now.
    async up(db) {
      await db.schema.alterTable('domains', (t) => {
        t.timestamp('verified_at', { useTz: true });
        t.timestamp('claim_expires_at', { useTz: true });
      });
      await db.raw(`update domains set verified_at = coalesce(last_checked_at, updated_at)
        where routed or status in ('verified', 'active') or tls_issuer is not null`);
      await db.raw(`update domains set claim_expires_at = now() + interval '7 days' where verified_at is null`);
      await db.raw('alter table domains add constraint domains_claim_expires check (verified_at is not null or claim_expires_at is not null)');
      await db.raw('alter table domains drop constraint domains_hostname_unique');
      await db.raw('create unique index domains_verified_hostname on domains (hostname) where verified_at is not null');
      await db.raw('create unique index domains_service_hostname on domains (service_id, hostname)');
      await db.raw('create index domains_hostname on domains (hostname)');
      await db.raw('create index domains_claim_expiry on domains (claim_expires_at) where verified_at is null');
    },
    async down(db) {
      // One row per hostname again: the verified one, else the oldest claim.
      await db.raw(`delete from domains d where exists (
        select 1 from domains o where o.hostname = d.hostname and o.id <> d.id and (
          (o.verified_at is not null and d.verified_at is null)
          or ((o.verified_at is null) = (d.verified_at is null) and (o.created_at, o.id) < (d.created_at, d.id))))`);
      await db.raw('drop index domains_claim_expiry');
      await db.raw('drop index domains_hostname');
      await db.raw('drop index domains_service_hostname');
      await db.raw('drop index domains_verified_hostname');
      await db.raw('alter table domains add constraint domains_hostname_unique unique (hostname)');
      await db.raw('alter table domains drop constraint domains_claim_expires');
      await db.schema.alterTable('domains', (t) => {
        t.dropColumn('claim_expires_at');
        t.dropColumn('verified_at');
      });
    },
  },
  {
    // Elastic services (domain/services/elastic.ts): the two settings, and the replica count
    // the elastic controller chose (null: the service is not elastic, min_replicas applies).
    name: '0012_elastic',
    async up(db) {
      await db.schema.alterTable('services', (t) => {
        t.integer('idle_timeout_seconds');
        t.integer('target_concurrency');
        t.integer('desired_replicas');
      });
      await db.raw(`update services set idle_timeout_seconds = 900 where deployment_mode = 'on_demand'`);
      await db.raw(`update services set target_concurrency = 25 where service_type = 'web'`);
    },
    async down(db) {
      await db.schema.alterTable('services', (t) => {
        t.dropColumn('desired_replicas');
        t.dropColumn('target_concurrency');
        t.dropColumn('idle_timeout_seconds');
      });
    },
  },
  {
    // Leases: one change per resource and one leader per background loop across instances (kit's leases.ts).
    name: '0013_leases',
    up: (db) => createLeasesTable(db),
    down: (db) => db.schema.dropTable('leases'),
  },
  {
    // Uploaded build sources, in pieces, until their build ran (domain/builds/builds.ts): the
    // instance that runs the build queue may not be the one that received the upload.
    name: '0014_build_sources',
    async up(db) {
      await db.schema.createTable('build_sources', (t) => {
        t.uuid('build_id').notNullable();
        t.integer('seq').notNullable();
        t.binary('part').notNullable();
        t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
        t.primary(['build_id', 'seq']);
      });
    },
    down: (db) => db.schema.dropTable('build_sources'),
  },
  {
    // Service metrics (domain/metrics): rows per service and minute (bucket_seconds 60) or
    // hour (3600), which add (a flush, or another instance, writes another row of the same
    // bucket); minutes rolled into an hour are marked so. metric_coverage: the minutes in
    // which the edge's requests were being counted, so a minute nobody counted reads null;
    // metric_cursors: where counting the edge's requests goes on after a restart or handover.
    name: '0015_service_metrics',
    async up(db) {
      await db.schema.createTable('metric_rows', (t) => {
        t.bigIncrements('id');
        t.uuid('service_id').notNullable();
        t.integer('bucket_seconds').notNullable();
        t.timestamp('bucket_start', { useTz: true }).notNullable();
        t.boolean('rolled').notNullable().defaultTo(false);
        t.integer('requests').notNullable().defaultTo(0);
        t.integer('status_2xx').notNullable().defaultTo(0);
        t.integer('status_3xx').notNullable().defaultTo(0);
        t.integer('status_4xx').notNullable().defaultTo(0);
        t.integer('status_5xx').notNullable().defaultTo(0);
        t.jsonb('latency').notNullable().defaultTo('{}');
        t.double('cpu_sum').notNullable().defaultTo(0);
        t.integer('cpu_samples').notNullable().defaultTo(0);
        t.double('memory_sum').notNullable().defaultTo(0);
        t.integer('memory_samples').notNullable().defaultTo(0);
        t.index(['service_id', 'bucket_seconds', 'bucket_start'], 'metric_rows_service');
      });
      await db.raw('create index metric_rows_unrolled on metric_rows (bucket_start) where bucket_seconds = 60 and not rolled');
      await db.raw('alter table metric_rows add constraint metric_rows_bucket check (bucket_seconds in (60, 3600))');
      await db.schema.createTable('metric_coverage', (t) => {
        t.timestamp('minute', { useTz: true }).primary();
      });
      // The last request counted (ms since the epoch), moved in the transaction that writes its rows.
      await db.schema.createTable('metric_cursors', (t) => {
        t.text('name').primary();
        t.bigInteger('at_ms').notNullable();
      });
    },
    async down(db) {
      await db.schema.dropTable('metric_cursors');
      await db.schema.dropTable('metric_coverage');
      await db.schema.dropTable('metric_rows');
    },
  },
];
