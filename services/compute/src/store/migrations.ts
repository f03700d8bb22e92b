import { createOutboxTable, type Migration } from '@pier/kit';

export const SCHEMA = 'compute';

export const migrations: Migration[] = [
  {
    name: '0001_outbox',
    up: (db) => createOutboxTable(db),
    down: (db) => db.schema.dropTable('outbox'),
  },
];
