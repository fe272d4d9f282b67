import type { AppConfig } from "./core/config";
import type { Clock } from "./core/clock";
import { ActionError, errorMessage } from "./core/errors";
import type { Logger } from "./core/log";
import type { TransformRunner } from "./executor/run";
import type { SafeFetch } from "./net/types";
import { renderTemplate } from "./template";

const TIMEOUT_MS = 30_000;

/**
 * The optional AI transform: one call to an OpenAI-compatible chat completions endpoint
 * (OpenRouter by default; point OPENROUTER_BASE_URL at Ollama for no account). Retried once on
 * 429/5xx before the run's own retry policy takes over; skipped with a warning when no key is set.
 */
export function createTransformRunner(deps: { http: SafeFetch; config: AppConfig; clock: Clock; log: Logger }): TransformRunner {
  const { config } = deps;
  return async (transform, ctx, timezone) => {
    const prompt = renderTemplate(transform.prompt, ctx, { timezone });
    const input = { model: transform.model, prompt: prompt.value, json: transform.json, base_url: config.openrouterBaseUrl };
    if (!config.openrouterApiKey) {
      return { value: null, input, warnings: [...prompt.warnings, "transform skipped: OPENROUTER_API_KEY is not set"], secretsUsed: prompt.secretsUsed, skipped: true };
    }
    const messages = [
      ...(transform.json ? [{ role: "system", content: "Answer with one JSON value only: no prose, no code fences." }] : []),
      { role: "user", content: prompt.value },
    ];
    const body = JSON.stringify({
      model: transform.model,
      temperature: 0,
      messages,
      ...(transform.json ? { response_format: { type: "json_object" } } : {}),
    });
    const call = () =>
      // The endpoint comes from the operator's environment, not from an applet: a local Ollama on
      // localhost is allowed without ALLOW_PRIVATE_URLS.
      deps.http(`${config.openrouterBaseUrl}/chat/completions`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          authorization: `Bearer ${config.openrouterApiKey}`,
          "x-title": "whenthen",
        },
        body,
        timeoutMs: TIMEOUT_MS,
        maxBytes: 1024 * 1024,
        allowPrivate: true,
      });
    let res = await call();
    if (res.status === 429 || res.status >= 500) {
      deps.log.info("transform: retrying once", { status: res.status });
      await deps.clock.sleep(1000);
      res = await call();
    }
    if (res.status < 200 || res.status >= 300) {
      throw new ActionError(`transform: ${transform.model} answered ${res.status}: ${res.text().slice(0, 300)}`, {
        retryable: res.status === 429 || res.status >= 500,
      });
    }
    let content: string;
    try {
      const parsed = JSON.parse(res.text()) as { choices?: { message?: { content?: unknown } }[] };
      const c = parsed.choices?.[0]?.message?.content;
      if (typeof c !== "string") throw new Error("no choices[0].message.content");
      content = c;
    } catch (err) {
      throw new ActionError(`transform: unexpected response from ${config.openrouterBaseUrl}: ${errorMessage(err)}`, { retryable: false });
    }
    const warnings = [...prompt.warnings];
    if (!transform.json) return { value: content.trim(), input, warnings, secretsUsed: prompt.secretsUsed };
    try {
      return { value: JSON.parse(stripFences(content)), input, warnings, secretsUsed: prompt.secretsUsed };
    } catch {
      warnings.push("transform: the model did not answer valid JSON; the raw text is stored instead");
      return { value: content, input, warnings, secretsUsed: prompt.secretsUsed };
    }
  };
}

function stripFences(text: string): string {
  const m = /^\s*```(?:json)?\s*([\s\S]*?)\s*```\s*$/i.exec(text);
  return m ? m[1]! : text.trim();
}
