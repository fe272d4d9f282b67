import { afterAll, describe, expect, test } from "vitest";
import { httpAction, httpConfigSchema } from "@/lib/actions/http";
import { createActionContext, failure, removeTempDirs } from "../helpers/action-context";
import { sentTo, useHttpMocks } from "../helpers/http";

useHttpMocks();
afterAll(removeTempDirs);

const call = (status: number) => httpAction.run(httpConfigSchema.parse({ url: `https://status.test/status/${status}`, body: { a: 1 } }), createActionContext());

describe("http action: retry classification (spec Actions: 5xx, 429 and network errors are retryable; other 4xx are not)", () => {
  test.each([500, 502, 503, 504, 429])("AC8: HTTP %i is retryable", async (status) => {
    const err = await failure(call(status));
    expect(err.retryable).toBe(true);
    expect(err.output).toMatchObject({ status });
  });

  test.each([400, 401, 403, 404, 408, 409, 410, 413, 422])("AC8: HTTP %i is not retryable", async (status) => {
    const err = await failure(call(status));
    expect(err.retryable).toBe(false);
    expect(sentTo("status")).toHaveLength(1);
  });
});
