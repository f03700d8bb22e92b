import { InputError } from '@pier/kit';

// The distribution reference grammar (github.com/distribution/reference), written out:
// [domain[:port]/]path[/path...][:tag][@digest].
const DOMAIN_COMPONENT = '(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])';
const DOMAIN = `${DOMAIN_COMPONENT}(?:\\.${DOMAIN_COMPONENT})*(?::[0-9]+)?`;
const PATH_COMPONENT = '[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*';
const TAG = '[\\w][\\w.-]{0,127}';
const DIGEST = '[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}';
const REFERENCE = new RegExp(`^(?:${DOMAIN}/)?${PATH_COMPONENT}(?:/${PATH_COMPONENT})*(?::${TAG})?(?:@${DIGEST})?$`);
const BARE_TAG = new RegExp(`^${TAG}$`);

export const IMAGE_REFERENCE_MAX = 512;

export function isImageReference(value: string): boolean {
  return value.length <= IMAGE_REFERENCE_MAX && REFERENCE.test(value);
}

/**
 * A bare tag has no `/`, `:` or `@`: `v2`, `2024-06-01`, `latest`. Anything else is taken
 * as a full reference. (`nginx` alone is therefore a tag; write `nginx:latest` or
 * `library/nginx` to mean the image.)
 */
export function isBareTag(value: string): boolean {
  return BARE_TAG.test(value);
}

/** The repository part of a reference: without its tag and digest. */
export function repositoryOf(reference: string): string {
  const noDigest = reference.split('@')[0]!;
  const slash = noDigest.lastIndexOf('/');
  const colon = noDigest.lastIndexOf(':');
  return colon > slash ? noDigest.slice(0, colon) : noDigest;
}

/**
 * What a deploy runs: a bare tag goes on the service's configured image repository; a
 * full reference is used as it stands.
 */
export function resolveImage(imageTag: string, configuredImage: string | null): string {
  const value = imageTag.trim();
  if (isBareTag(value)) {
    if (!configuredImage) {
      throw new InputError(
        "image_tag: a bare tag needs the service's image to be set; give a full image reference (repository:tag) instead",
        'image_repository_unset',
        { field: 'image_tag' },
      );
    }
    return `${repositoryOf(configuredImage)}:${value}`;
  }
  if (!isImageReference(value)) {
    throw new InputError(`image_tag: "${value}" is neither a tag nor an image reference`, 'invalid_request', { field: 'image_tag' });
  }
  return value;
}
