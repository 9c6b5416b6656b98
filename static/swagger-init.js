// Swagger UI from the vendored bundle; the API document is served by this process.
window.ui = SwaggerUIBundle({
  url: "/v3/api-docs",
  dom_id: "#swagger-ui",
  persistAuthorization: true,
  requestInterceptor: (req) => {
    const token = localStorage.getItem("token");
    if (token && !req.headers.Authorization) req.headers.Authorization = "Bearer " + token;
    return req;
  },
});
