import { z } from 'zod';
import {
  defineRoute,
  pageQuery,
  queryFlag,
  vpcScope,
  listOf,
  errorResponses,
  FORBIDDEN_DESCRIPTION,
  listBody,
  type Route,
  type ServerSentEvent,
} from '@pier/kit';
import { buildLog, cancelBuild, createGitBuild, createUploadBuild, followBuild, getBuild, listBuilds } from '../domain/builds/builds.ts';
import type { ComputeContext } from '../domain/context.ts';
import { BASE, serviceParams } from './service-routes.ts';
import { buildJson, buildLogSchema, buildSchema } from './build-shapes.ts';

const buildParams = serviceParams.extend({ buildID: z.string() });
const BUILDS = `${BASE}/{serviceID}/builds`;

const options = {
  dockerfile_path: z.string().max(1024).optional().describe('The Dockerfile, relative to the root of the source (default `Dockerfile`)'),
  context_dir: z.string().max(1024).optional().describe('The build context, relative to the root of the source (default `.`)'),
};

const errors = errorResponses({
  400: 'Invalid input; `field` names the offending field (`repo_url` for a refused URL, `archive` for a refused archive)',
  403: FORBIDDEN_DESCRIPTION,
  404: 'Service (or build) not found',
  409: 'The service is being deleted',
  503: 'Builds are not available on this cluster (`builds_unavailable`)',
});

const queued = { description: 'The build, `queued`; it starts when its workspace runs fewer builds than the limit', schema: buildSchema };

export function buildRoutes(ctx: ComputeContext): Route[] {
  return [
    defineRoute({
      method: 'get',
      path: BUILDS,
      summary: 'List builds, newest first',
      tag: 'services',
      access: 'Member',
      params: serviceParams,
      query: pageQuery,
      responses: {
        200: { description: 'A page of builds', schema: listOf(buildSchema) },
        400: { description: 'Invalid `limit` or `cursor`; `field` names it' },
        404: errors[404],
      },
      handler: async ({ params, query }) => {
        const page = await listBuilds(ctx, vpcScope(params), params.serviceID, query);
        return { status: 200, body: listBody(page, buildJson) };
      },
    }),
    defineRoute({
      method: 'post',
      path: `${BUILDS}/git`,
      summary: 'Build from a public git repository (https only); with `deploy` (default true) a success becomes a new deployment',
      tag: 'services',
      access: 'Admin',
      params: serviceParams,
      body: z.strictObject({
        repo_url: z.string().min(1).max(2048).describe('A public repository: https://host/path (no credentials, no private addresses)'),
        ref: z.string().max(255).nullable().optional().describe('A branch, a tag or a full commit id (default: the default branch)'),
        ...options,
        deploy: z.boolean().optional().describe('Deploy the image once built (default true)'),
      }),
      responses: { 202: queued, ...errors },
      handler: async ({ params, body }) => ({ status: 202, body: buildJson(await createGitBuild(ctx, vpcScope(params), params.serviceID, body)) }),
    }),
    defineRoute({
      method: 'post',
      path: `${BUILDS}/source-upload`,
      summary: 'Build from an uploaded archive (the body: a tar or a tar.gz of the source); options as query parameters',
      tag: 'services',
      access: 'Admin',
      params: serviceParams,
      query: z.object({ ...options, deploy: queryFlag(true, 'Deploy the image once built') }),
      rawBody: {
        contentTypes: ['application/gzip', 'application/x-gzip', 'application/x-tar'],
        limitBytes: ctx.builds.settings.uploadLimitBytes,
        description: 'The source as a tar (`application/x-tar`) or a gzip-compressed tar (`application/gzip`), at most the configured size (default 100 MiB)',
      },
      responses: {
        202: queued,
        ...errors,
        400: { description: 'Invalid options, or the body is not a valid archive, or holds paths escaping its root, links pointing outside it or devices' },
        413: { description: 'The archive is over the size limit' },
      },
      handler: async ({ params, query, stream }) => ({
        status: 202,
        body: buildJson(await createUploadBuild(ctx, vpcScope(params), params.serviceID, query, stream!)),
      }),
    }),
    defineRoute({
      method: 'get',
      path: `${BUILDS}/{buildID}`,
      summary: 'Build status',
      tag: 'services',
      access: 'Member',
      params: buildParams,
      responses: { 200: { description: 'The build', schema: buildSchema }, 404: errors[404] },
      handler: async ({ params }) => ({ status: 200, body: buildJson(await getBuild(ctx, vpcScope(params), params.serviceID, params.buildID)) }),
    }),
    defineRoute({
      method: 'get',
      path: `${BUILDS}/{buildID}/logs`,
      summary:
        'Build logs: the whole log; with `follow=true` a server-sent event stream (`log` events `{text}`, then one `status` event with the build) that ends when the build does',
      tag: 'services',
      access: 'Member',
      params: buildParams,
      query: z.object({ follow: queryFlag(false, 'Stream the log as server-sent events until the build ends') }),
      responses: {
        200: { description: 'The log (or, with follow=true, a text/event-stream)', schema: buildLogSchema },
        400: { description: 'Invalid `follow`' },
        404: errors[404],
      },
      handler: async ({ params, query, signal }) => {
        if (query.follow) {
          const build = await getBuild(ctx, vpcScope(params), params.serviceID, params.buildID);
          async function* events(): AsyncIterable<ServerSentEvent> {
            for await (const item of followBuild(ctx, build, signal)) {
              yield item.kind === 'log' ? { event: 'log', data: { text: item.text } } : { event: 'status', data: buildJson(item.build) };
            }
          }
          return { status: 200, events: events() };
        }
        const { build, log } = await buildLog(ctx, vpcScope(params), params.serviceID, params.buildID);
        return { status: 200, body: { build_id: build.id, status: build.status, log } };
      },
    }),
    defineRoute({
      method: 'post',
      path: `${BUILDS}/{buildID}/cancel`,
      summary: 'Cancel a queued or running build: it stops at once and leaves no image and no build container',
      tag: 'services',
      access: 'Admin',
      params: buildParams,
      responses: {
        202: { description: 'The build, `cancelled` (or still `running` for the moment it takes to stop)', schema: buildSchema },
        403: errors[403],
        404: errors[404],
        409: { description: 'The build already finished (`build_finished`) or is deploying its image (`build_deploying`)' },
      },
      handler: async ({ params }) => ({ status: 202, body: buildJson(await cancelBuild(ctx, vpcScope(params), params.serviceID, params.buildID)) }),
    }),
  ];
}
