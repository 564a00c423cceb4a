// A certified OpenID Provider (panva's oidc-provider) for the console's sign-in tests
// (testkit::emulators::oidc_provider): arguments port, redirect URI, audience; OIDC_USERS holds
// each account's tenant_id and roles, which its JWT access tokens carry.
import Provider from 'oidc-provider';
import { generateKeyPair, exportJWK } from 'jose';

const [port, redirect, audience] = process.argv.slice(2);
const users = JSON.parse(process.env.OIDC_USERS || '{}');
const issuer = `http://127.0.0.1:${port}`;
const { privateKey } = await generateKeyPair('ES256', { extractable: true });
const jwk = { ...(await exportJWK(privateKey)), kid: 'idp-1', alg: 'ES256', use: 'sig' };

const provider = new Provider(issuer, {
  clients: [{
    client_id: 'dps-console',
    redirect_uris: [redirect],
    token_endpoint_auth_method: 'none',
    grant_types: ['authorization_code'],
    response_types: ['code'],
    id_token_signed_response_alg: 'ES256',
  }],
  jwks: { keys: [jwk] },
  features: {
    devInteractions: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => audience,
      useGrantedResource: () => true,
      getResourceServerInfo: () => ({
        scope: 'openid',
        audience,
        accessTokenFormat: 'jwt',
        jwt: { sign: { alg: 'ES256' } },
      }),
    },
  },
  findAccount: async (ctx, id) => ({ accountId: id, claims: async () => ({ sub: id }) }),
  extraTokenClaims: async (ctx, token) => {
    const user = users[token.accountId];
    return user ? { tenant_id: user.tenant_id, roles: user.roles } : {};
  },
  ttl: { AccessToken: 3600 },
});
provider.proxy = false;
provider.listen(Number(port), '127.0.0.1', () => console.log(`listening ${issuer}`));
